"""Requests per second through each adapter under a real server, next to the bare framework.

For each server (Litestar under uvicorn; Flask under werkzeug's threaded server and under
uvicorn's WSGI interface, the servers installed here) the bench starts a real process on a
loopback port, registers one session key per client thread, creates an invoice, and then
measures, in the same run and against the same process:

- ``bare``: ``GET /health``, the framework's own trivial JSON route (the ceiling);
- ``prices``: ``GET /paycore/prices``, paycore's cheapest public read;
- ``get_invoice``: ``GET /paycore/invoice/{guid}``, session-signed over the URI;
- ``post_invoice``: ``POST /paycore/invoice``, session-signed over the body (one new
  invoice per request).

Every signed request carries a fresh nonce; requests are signed with eth-account before the
clock starts so the client's signing does not count. Each client thread owns its session
key, so the nonces of one key arrive in order. The ratios (case / bare) are what to compare
across machines; the absolute figures depend on the machine. The client is Python (httpx,
a few threads): ``client_cpu`` near 1.0 means the client, not the server, was the limit.

Output: one JSON object on stdout; progress on stderr.

    python bench/http_bench.py [--threads 4] [--seconds 1.5] [--rounds 2] [--only NAME]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any

import httpx
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount

PREFIX = "/paycore"
ETH_1 = "1:0x0000000000000000000000000000000000000000"
DEPOSIT = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
INVOICE_BODY = json.dumps(
    {
        "value": "49.90",
        "chainId": 1,
        "description": "Order #10042",
        "acceptedTokens": [ETH_1],
        "address": DEPOSIT,
        "data": {"orderId": 10042},
    },
    separators=(",", ":"),
).encode()
#: Pre-signed requests per client thread, signed case and round; a thread that uses them all
#: before the time is up stops early (its own rate still counts).
POOL = 800


def _log(text: str) -> None:
    print(f"http_bench: {text}", file=sys.stderr, flush=True)


def _servers(port: int) -> dict[str, list[str]]:
    py = sys.executable
    serve = [py, "-m", "paycore.runtime.cli", "serve", "--port", str(port), "--prefix", PREFIX]
    return {
        "litestar+uvicorn": [*serve, "--framework", "litestar"],
        "flask+werkzeug-threaded": [*serve, "--framework", "flask"],
        "flask+uvicorn-wsgi": [
            py, "-m", "uvicorn", "--factory", "paycore_flask:create_app", "--interface", "wsgi",
            "--port", str(port), "--log-level", "warning", "--no-access-log",
        ],
    }  # fmt: skip


# -- signing (client side, eth-account) ----------------------------------------------------
def _sign(acct: LocalAccount, text: str) -> str:
    return "0x" + bytes(acct.sign_message(encode_defunct(text=text)).signature).hex()


def _public_key(acct: LocalAccount) -> str:
    return "0x04" + acct._key_obj.public_key.to_bytes().hex()


def _session_headers(acct: LocalAccount, nonce: int, signed: bytes) -> dict[str, str]:
    digest = hashlib.sha256(signed).hexdigest()
    return {
        "x-session-nonce": str(nonce),
        "x-session-signature": _sign(acct, f"sess:{nonce}:{digest}"),
    }


@dataclass
class Client:
    """One client thread's session key and its next nonce."""

    key: LocalAccount
    nonce: int = 0

    def headers(self, signed: bytes) -> dict[str, str]:
        self.nonce += 1
        return _session_headers(self.key, self.nonce, signed)


# -- the server process --------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def _server(command: list[str], base: str, threads: int) -> Iterator[None]:
    env = {
        **os.environ,
        "PAYCORE_DATABASE_URL": "memory://",
        "PAYCORE_AUTH_MODE": "strict",
        "PAYCORE_SESSION_KEY_CAP": str(threads + 1),
        "PAYCORE_PRICES": json.dumps({ETH_1: "3000"}),
    }
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise RuntimeError(f"server exited with {proc.returncode}: {err}")
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("server did not come up within 30 s")
            time.sleep(0.1)
        yield
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- one measured case ---------------------------------------------------------------------
Request = tuple[str, str, bytes, dict[str, str]]  # method, uri, body, headers


@dataclass
class Case:
    name: str
    expect: int
    #: One request list per thread, consumed in order across rounds (nonces only grow);
    #: None means "the same ``fixed`` request over and over".
    requests: list[list[Request]] | None = None
    fixed: Request | None = None
    cursor: list[int] = field(default_factory=list)


def _run(base: str, case: Case, threads: int, seconds: float) -> dict[str, Any]:
    barrier = threading.Barrier(threads + 1)
    rates = [0.0] * threads
    sent = [0] * threads
    errors: list[str] = []

    def worker(i: int) -> None:
        requests = case.requests[i] if case.requests is not None else None
        with httpx.Client(base_url=base, timeout=30) as client:
            client.get("/health")  # open the connection before the clock starts
            barrier.wait()
            start = time.perf_counter()
            deadline = start + seconds
            n = 0
            while time.perf_counter() < deadline:
                if requests is None:
                    assert case.fixed is not None
                    method, uri, body, headers = case.fixed
                elif case.cursor[i] < len(requests):
                    method, uri, body, headers = requests[case.cursor[i]]
                    case.cursor[i] += 1
                else:
                    break
                reply = client.request(method, uri, content=body, headers=headers)
                if reply.status_code != case.expect:
                    errors.append(f"{reply.status_code} {reply.text[:120]}")
                    break
                n += 1
            sent[i] = n
            rates[i] = n / (time.perf_counter() - start)

    pool = [threading.Thread(target=worker, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    barrier.wait()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for t in pool:
        t.join()
    cpu = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    if errors:
        raise RuntimeError(f"{case.name}: unexpected answer {errors[0]}")
    return {"req_per_s": round(sum(rates), 1), "requests": sum(sent), "client_cpu": round(cpu, 2)}


def _post(client: Client) -> Request:
    headers = {"content-type": "application/json", **client.headers(INVOICE_BODY)}
    return ("POST", PREFIX + "/invoice", INVOICE_BODY, headers)


# -- per server ----------------------------------------------------------------------------
def _bench_server(
    name: str, command: list[str], base: str, threads: int, seconds: float, rounds: int
) -> dict[str, Any]:
    owner: LocalAccount = Account.from_key(hashlib.sha256(b"bench-owner").digest())
    clients = [
        Client(Account.from_key(hashlib.sha256(f"bench-key-{i}".encode()).digest()))
        for i in range(threads)
    ]
    with _server(command, base, threads), httpx.Client(base_url=base, timeout=30) as http:
        for c in clients:
            pub = _public_key(c.key)
            body = {"ownerAddress": owner.address, "publicKey": pub, "signature": _sign(owner, pub)}
            reply = http.post(PREFIX + "/auth/register-pubkey", json=body)
            assert reply.status_code == 200, reply.text
        created = http.post(
            PREFIX + "/invoice", content=INVOICE_BODY, headers=clients[0].headers(INVOICE_BODY)
        )
        assert created.status_code == 201, created.text
        uri = f"{PREFIX}/invoice/{created.json()['guid']}"

        _log(f"{name}: signing {threads} x 2 x {rounds} x {POOL} requests")
        # Signed in the order they are sent (round by round, GETs then POSTs) so that each
        # key's nonces only grow; each round starts at its own slice, skipping leftovers.
        gets: list[list[Request]] = [[] for _ in clients]
        posts: list[list[Request]] = [[] for _ in clients]
        for _ in range(rounds):
            for i, c in enumerate(clients):
                gets[i] += [("GET", uri, b"", c.headers(uri.encode())) for _ in range(POOL)]
                posts[i] += [_post(c) for _ in range(POOL)]
        cases = [
            Case("bare", 200, fixed=("GET", "/health", b"", {})),
            Case("prices", 200, fixed=("GET", PREFIX + "/prices", b"", {})),
            Case("get_invoice", 200, requests=gets),
            Case("post_invoice", 201, requests=posts),
        ]
        _run(base, cases[0], threads, min(seconds, 0.5))  # warm-up
        # Rounds interleave the cases, and the best round counts: on a busy machine that is
        # the figure least disturbed by whatever else ran at the same moment.
        results: dict[str, Any] = {}
        for r in range(rounds):
            for case in cases:
                case.cursor = [r * POOL] * threads
                result = _run(base, case, threads, seconds)
                best = results.get(case.name)
                if best is None or result["req_per_s"] > best["req_per_s"]:
                    results[case.name] = result
        for case in cases:
            _log(f"{name}: {case.name} {results[case.name]['req_per_s']} req/s")
    bare = results["bare"]["req_per_s"]
    results["ratio_vs_bare"] = {
        k: round(results[k]["req_per_s"] / bare, 3)
        for k in ("prices", "get_invoice", "post_invoice")
    }
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--threads", type=int, default=4, help="concurrent client threads")
    parser.add_argument("--seconds", type=float, default=1.5, help="duration of each case")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per case; best counts")
    parser.add_argument(
        "--only", action="append", help="run only this server (repeatable); default all"
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    report: dict[str, Any] = {
        "bench": "http",
        "threads": args.threads,
        "seconds_per_case": args.seconds,
        "rounds": args.rounds,
        "servers": {},
    }
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    for name, command in _servers(port).items():
        if args.only and name not in args.only:
            continue
        _log(f"{name}: starting")
        report["servers"][name] = _bench_server(
            name, command, base, args.threads, args.seconds, args.rounds
        )
    servers = report["servers"]
    if "litestar+uvicorn" in servers and "flask+werkzeug-threaded" in servers:
        report["litestar_vs_flask_get_invoice"] = round(
            servers["litestar+uvicorn"]["get_invoice"]["req_per_s"]
            / servers["flask+werkzeug-threaded"]["get_invoice"]["req_per_s"],
            2,
        )
    report["environment"] = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        # Client and servers share these CPUs; a load average above their count at either
        # end means other work competed with the run and the figures are rough.
        "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        **{p: version(p) for p in ("flask", "werkzeug", "litestar", "uvicorn", "httpx")},
        "note": "no gunicorn or waitress installed: werkzeug's threaded dev server and "
        "uvicorn's WSGI interface stand in for a production WSGI server",
    }
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
