"""``paycore serve`` as a real process on a loopback port, spoken to over real HTTP."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from adapter_helpers import ETH_1, account, free_port, registration, session_headers

pytestmark = pytest.mark.slow  # `paycore serve` in a subprocess


@pytest.fixture(params=["flask", "litestar"])
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "PAYCORE_PRICES": json.dumps({ETH_1: "2500"}), "PAYCORE_PREFIX": "/pay"}
    command = [sys.executable, "-m", "paycore.runtime.cli", "serve", "--framework", request.param]
    command += ["--port", str(port), "--database-url", "memory://"]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(proc, base + "/health")
        yield base
    finally:
        proc.terminate()
        try:
            code = proc.wait(timeout=15)
        except subprocess.TimeoutExpired:  # pragma: no cover - a hung server fails the test
            proc.kill()
            raise
        output = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    # A clean stop: gunicorn's arbiter stops its worker gracefully and exits 0.
    assert code == 0, output
    assert f"paycore: {request.param} on {base}/pay/ (1 worker, storage memory://)" in output


def _wait_until_up(proc: subprocess.Popen[bytes], url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            raise AssertionError(f"paycore serve exited with {proc.returncode}:\n{out}")
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"paycore serve did not answer {url} within 30 s")


def test_serve_answers_over_real_http(server: str) -> None:
    with httpx.Client(base_url=server, timeout=10) as client:
        prices = client.get("/pay/prices")
        assert prices.status_code == 200
        assert prices.headers["content-type"] == "application/json"
        assert prices.json()["prices"] == {ETH_1: 2500}  # PAYCORE_PRICES reached the gateway
        assert client.get("/pay/openapi.json").json()["servers"] == [{"url": "/pay"}]
        assert client.get("/health").json() == {"ok": True}
    # On a connection of its own: a server may close a connection whose body it refused
    # unread (gunicorn may), which a keep-alive client would see as its next request failing.
    with httpx.Client(base_url=server, timeout=10) as client:
        big = client.post("/pay/invoice", content=b"x" * (70 * 1024))
        assert (big.status_code, big.text) == (413, "payload too large: the limit is 65536 bytes")


def test_the_export_streams_over_real_http(server: str) -> None:
    """GET /export through gunicorn (Flask's threaded workers, Litestar's uvicorn ones):
    sent chunked, without a length, and loads with the csv module."""
    owner, key = account("serve:export:owner"), account("serve:export:key")
    nonce = 1000
    made = []
    with httpx.Client(base_url=server, timeout=10) as client:
        client.post("/pay/auth/register-pubkey", json=registration(owner, key)).raise_for_status()
        for n in range(3):
            address = account(f"serve:export:deposit:{n}").address
            body = json.dumps(
                {"value": "5", "chainId": 1, "description": f"order {n}",
                 "acceptedTokens": [ETH_1], "address": address}
            ).encode()  # fmt: skip
            nonce += 1
            reply = client.post(
                "/pay/invoice", content=body, headers=session_headers(key, nonce, body)
            )
            made.append(reply.json()["guid"])
        uri = f"/pay/export?owner={owner.address}&records=invoices"
        nonce += 1
        with client.stream("GET", uri, headers=session_headers(key, nonce, uri.encode())) as reply:
            assert reply.status_code == 200, reply.read()
            assert reply.headers["content-type"].startswith("text/csv")
            assert reply.headers.get("transfer-encoding") == "chunked"
            assert "content-length" not in reply.headers
            text = b"".join(reply.iter_bytes()).decode()
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    assert [(r["record"], r["guid"], r["value"]) for r in rows] == [
        ("invoice", guid, "5")
        for guid in sorted(made)  # one second: then by guid
    ]
