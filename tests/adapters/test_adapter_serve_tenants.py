"""Many merchants on one ``paycore serve`` (issue 28), spoken to over real HTTP on loopback
as an outsider would: Flask and Litestar, memory and PostgreSQL storage, soft auth mode.

One server per case, one scenario per server: a stranger claiming a merchant in soft mode
changes nothing of it; another merchant cannot make the first one's wallet its app key
without that wallet's consent, and the merchant's own calls keep acting for it (the calls
docs/management.md shows are run as written); registrations past the per-IP limit are 429
with Retry-After; and a 413 leaves a kept-alive connection usable.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from adapter_helpers import ETH_1, account, free_port, registration, session_headers, sign
from eth_account.signers.local import LocalAccount

pytestmark = pytest.mark.slow  # `paycore serve` in a subprocess

MANAGEMENT_DOC = Path(__file__).resolve().parents[2] / "docs" / "management.md"
REGISTRATIONS_PER_MINUTE = 5


def _start(framework: str, database_url: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {
        **os.environ,
        "PAYCORE_PRICES": json.dumps({ETH_1: "2500"}),
        "PAYCORE_PREFIX": "/pay",
        "PAYCORE_AUTH_MODE": "soft",
        "PAYCORE_IP_REGISTRATION_LIMIT": str(REGISTRATIONS_PER_MINUTE),
    }
    command = [sys.executable, "-m", "paycore.runtime.cli", "serve", "--framework", framework]
    command += ["--port", str(port), "--database-url", database_url]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            raise AssertionError(f"paycore serve exited with {proc.returncode}:\n{out}")
        try:
            if httpx.get(base + "/health", timeout=1).status_code == 200:
                return proc, base
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    proc.kill()
    raise AssertionError("paycore serve did not answer within 60 s")


@pytest.fixture(
    params=[
        ("flask", "memory"),
        ("litestar", "memory"),
        pytest.param(("flask", "postgresql"), marks=pytest.mark.postgres),
        pytest.param(("litestar", "postgresql"), marks=pytest.mark.postgres),
    ],
    ids=lambda p: "-".join(p),
)
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    framework, storage = request.param
    url = "memory://"
    if storage == "postgresql":
        new_schema: Callable[[], Any] = request.getfixturevalue("postgres_schema")
        url = new_schema().render_as_string(hide_password=False)
    proc, base = _start(framework, url)
    try:
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hung server fails the test
            proc.kill()
            raise


def _salted(signer: LocalAccount, **fields: Any) -> dict[str, Any]:
    body = {"salt": int(time.time()), **fields}
    body["signature"] = sign(signer, json.dumps(body, separators=(",", ":")))
    return body


def _doc_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", MANAGEMENT_DOC.read_text(), flags=re.S)


def test_one_merchant_cannot_reach_another(server: str) -> None:
    api = server + "/pay"
    victim, victim_key = account("serve:victim"), account("serve:victim:key")
    squatter, squatter_key = account("serve:squatter"), account("serve:squatter:key")
    with httpx.Client(timeout=10) as client:
        for owner, key in ((victim, victim_key), (squatter, squatter_key)):
            client.post(
                f"{api}/auth/register-pubkey", json=registration(owner, key)
            ).raise_for_status()
        profile = json.dumps({"name": "Mugs", "logoUrl": "https://cdn.shop.example/l.png"})
        body = profile.encode()
        client.post(
            f"{api}/merchant/profile",
            content=body,
            headers={"content-type": "application/json", **session_headers(victim_key, 1, body)},
        ).raise_for_status()

        # Soft mode: a merely claimed owner writes nothing of the victim's.
        forged = {
            "ownerAddress": victim.address,
            "name": "Evil",
            "logoUrl": "https://evil.example/l.png",
        }
        answer = client.post(f"{api}/merchant/profile", json=forged)
        assert answer.status_code == 401 and "a session is needed in every auth mode" in answer.text
        for path, extra in (("/link/disable", {"id": "x"}), ("/refund/cancel", {"refundId": "1"})):
            claimed = {"ownerAddress": victim.address, "owner": victim.address, **extra}
            assert client.post(api + path, json=claimed).status_code == 401
        read = client.get(f"{api}/merchant/profile", params={"owner": victim.address})
        assert read.json()["name"] == "Mugs"  # reads by a claimed owner stay allowed in soft mode

        # App-key squatting: the squatter names the victim's wallet as its app key.
        squat = _salted(squatter, appKeyAddress=victim.address)
        answer = client.post(f"{api}/addNewAppKey", json=squat)
        assert (answer.status_code, answer.text) == (
            400,
            "invalid request: appKeySignature: required",
        )
        text = f"accept-app-key:{squatter.address.lower()}:{victim.address.lower()}:"
        time.sleep(1)  # a new salt, a new signature
        own = sign(squatter, text + str(int(time.time())))
        answer = client.post(
            f"{api}/addNewAppKey",
            json=_salted(squatter, appKeyAddress=victim.address, appKeySignature=own),
        )
        assert answer.status_code == 401 and answer.text.startswith(
            "app key signature: not signed by"
        )
        keys = client.post(f"{api}/getAppKeys", json={"ownerAddress": squatter.address}).json()
        assert keys == []

        # The victim's own calls, exactly as docs/management.md writes them, act for it.
        first, second = _doc_blocks()
        space: dict[str, Any] = {"wallet": victim, "base": api, "new_key": account("serve:app")}
        exec(first, space)  # noqa: S102 - the documented example, run as written
        exec(second, space)  # noqa: S102
        listed = client.post(f"{api}/getAppKeys", json={"ownerAddress": victim.address}).json()
        assert [k["address"] for k in listed] == [account("serve:app").address]

        # Throw-away wallets: registrations past the per-IP limit are refused.
        answers = [
            client.post(
                f"{api}/auth/register-pubkey",
                json=registration(account(f"serve:throwaway:{n}"), account(f"serve:tk:{n}")),
            )
            for n in range(REGISTRATIONS_PER_MINUTE)
        ]
        assert [a.status_code for a in answers] == [200] * (REGISTRATIONS_PER_MINUTE - 2) + [
            429
        ] * 2
        assert 1 <= int(answers[-1].headers["retry-after"]) <= 60 // REGISTRATIONS_PER_MINUTE
        assert answers[-1].text.startswith("too many requests: session key registrations")


def _exchange(sock: socket.socket, raw: bytes) -> bytes:
    """Send one request and read one whole answer (its Content-Length), in bounded time."""
    sock.sendall(raw)
    data = b""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            length = re.search(rb"(?i)content-length: *(\d+)", head)
            if length and len(rest) >= int(length.group(1)):
                return data
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    raise AssertionError("no whole answer within 10 s")


def test_a_413_keeps_the_connection_it_announces(server: str) -> None:
    """Flask announced keep-alive with its 413, then closed without reading the body."""
    host, port = server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        for size in (70 * 1024, 900 * 1024):
            body = b"x" * size
            head = f"POST /pay/invoice HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n"
            answer = _exchange(
                sock, head.encode() + b"content-type: application/json\r\n\r\n" + body
            )
            assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
            assert answer.endswith(b"payload too large: the limit is 65536 bytes")
            prices = _exchange(sock, b"GET /pay/prices HTTP/1.1\r\nHost: x\r\n\r\n")
            assert prices.startswith(b"HTTP/1.1 200"), prices[:200]
