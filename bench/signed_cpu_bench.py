"""CPU per signed request in-process: the adapter's ASGI app driven directly, no server.

The machine is shared, so rates through a socket are noisy; the process's CPU clock over
thousands of calls through the very app ``paycore serve`` builds (Litestar, or Flask behind
its ASGI front) is not. Each call is one pre-signed request with a fresh nonce (strict
mode, as ``http_bench.py`` runs the server): ``get`` is ``GET /paycore/invoice/{guid}``,
``post`` is ``POST /paycore/invoice``; ``public`` is the unsigned ``GET`` (the checkout
page's poll) and ``poll`` the same with ``If-None-Match`` (a 304).

Against each, in the same process and on the same database, ``bare_app.py``'s floor driven
the same way (Litestar's on a SQLite file on the event loop, ``--floor-inline``, its
fastest form there): for ``get`` and ``post`` the least a replay-proof signed request does
(``floor``: the key recovered and the nonce spent, and the POST's body stored with it) and
the least that request itself needs (``floor_with_read``: the nonce, then the invoice's
``SELECT``; ``floor_with_write``: the nonce and the invoice's row with its indexes, in one
transaction); for ``public`` and ``poll`` one indexed ``SELECT``. Each repetition runs
paycore and then each floor, ``--requests`` calls each, after a warm-up of its own; the
line gives the medians of ``--reps`` (at least 3).

Prints one JSON line per kind: CPU ms per request (``time.process_time``: every thread of
the process, the worker pool's included) and wall, for paycore and each floor, and each
floor's CPU over paycore's (``cpu_ratio``, ``cpu_ratio_with_read``,
``cpu_ratio_with_write``: 1.0 means paycore costs what the floor costs); per repetition
figures on stderr. With ``--profile``, Python function calls per request too (paycore's
first repetition; the core's thread hop made inline, so that one profile sees it all): a
count the machine's load does not disturb, where the CPU figures are the profile's.

``--framework flask-wsgi`` calls the Flask app as a host's own WSGI server does (the
deployment of a shop that embeds paycore in its Flask app): each request on the calling
thread, no event loop, every call's environ built before the clock starts.

``--floor-async`` (Litestar on PostgreSQL) measures against the async floor instead:
psycopg's ``AsyncConnection`` awaited in async handlers, the floor ``http_bench.py`` keeps
there because it is the faster one over HTTP. It has no write, so no ``post``.

    python bench/signed_cpu_bench.py [--framework litestar|flask|flask-wsgi]
                                     [--db sqlite|postgresql]
                                     [--kinds get,post,public,poll] [--requests 2000]
                                     [--reps 3] [--profile FILE] [--floor-async]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import json
import os
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from coincurve import PrivateKey  # noqa: E402
from http_bench import (  # noqa: E402  the bench's own signing and databases
    DEFAULT_POSTGRES,
    ETH_1,
    INVOICE_BODY,
    PREFIX,
    _database,
    _sign,
)

from paycore.auth.signatures import public_key_to_address  # noqa: E402
from paycore.config import Settings  # noqa: E402
from paycore.runtime.serve import create_app  # noqa: E402

#: One request as the drivers take it: method, target, headers, body.
Call = tuple[str, str, list[tuple[bytes, bytes]], bytes]
#: Calls each side makes before its clock starts, in every repetition.
WARM_UP = 50
#: The fuller floor of each signed kind: the work no correct implementation can skip.
FLOOR_WITH = {"get": "read", "post": "write"}


def _asgi(framework: str, app: Any) -> Any:
    """The app as ``paycore serve`` hands it to the server: Flask behind its ASGI front."""
    if framework == "flask-wsgi":
        return app
    if framework == "flask":
        from paycore_flask.asgi import AsgiFront

        return AsgiFront.for_app(app, threads=8)
    return app


def _key(i: int) -> PrivateKey:
    return PrivateKey(hashlib.sha256(f"cpu-bench-key-{i}".encode()).digest())


def _scope(method: str, uri: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    path, _, query = uri.partition("?")
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
        "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
        "query_string": query.encode(), "root_path": "", "headers": headers,
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000), "state": {},
    }  # fmt: skip


class Driver:
    def __init__(self, app: Any) -> None:
        self.app = app
        self.loop = asyncio.new_event_loop()
        self._lifespan: asyncio.Queue[Any] | None = None
        self.last_headers: list[tuple[bytes, bytes]] = []

    def start(self) -> None:
        async def run() -> None:
            inbox: asyncio.Queue[Any] = asyncio.Queue()
            started = asyncio.Event()
            self._lifespan = inbox

            async def receive() -> Any:
                return await inbox.get()

            async def send(message: Any) -> None:
                if message["type"] == "lifespan.startup.complete":
                    started.set()

            await inbox.put({"type": "lifespan.startup"})
            self._life_task = asyncio.ensure_future(
                self.app(
                    {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, receive, send
                )
            )
            await asyncio.wait_for(started.wait(), 30)

        self.loop.run_until_complete(run())

    def stop(self) -> None:
        """Shut the app down as a server does (``lifespan.shutdown``), then close the loop:
        a lifespan task left pending made asyncio complain at exit."""

        async def run() -> None:
            if self._lifespan is not None:
                await self._lifespan.put({"type": "lifespan.shutdown"})
                await asyncio.wait_for(self._life_task, 30)

        try:
            self.loop.run_until_complete(run())
        finally:
            self.loop.close()

    def call(
        self, method: str, uri: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> tuple[int, bytes]:
        return self.loop.run_until_complete(self._call(method, uri, headers, body))

    def run(
        self, calls: list[tuple[str, str, list[tuple[bytes, bytes]], bytes]], expect: int
    ) -> None:
        """Every call in turn inside one task, as a server's loop runs them (anyio keeps
        its worker threads for the life of the loop's task, not per call)."""

        async def each() -> None:
            for method, uri, headers, body in calls:
                status, answer = await self._call(method, uri, headers, body)
                if status != expect:
                    raise RuntimeError(f"{method} {uri}: {status} {answer[:200]!r}")

        self.loop.run_until_complete(each())

    async def _call(
        self, method: str, uri: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> tuple[int, bytes]:
        sent = False
        status = 0
        chunks: list[bytes] = []

        async def receive() -> Any:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                self.last_headers = message.get("headers", [])
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(_scope(method, uri, headers), receive, send)
        return status, b"".join(chunks)


class WsgiDriver:
    """:class:`Driver`'s calls made on a WSGI app, on this thread: a host's WSGI server."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.last_headers: list[tuple[bytes, bytes]] = []

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    @staticmethod
    def _environ(
        method: str, uri: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> dict[str, Any]:
        import io

        path, _, query = uri.partition("?")
        environ: dict[str, Any] = {
            "REQUEST_METHOD": method, "SCRIPT_NAME": "", "PATH_INFO": path,
            "QUERY_STRING": query, "RAW_URI": uri, "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "8000", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
            "wsgi.version": (1, 0), "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr, "wsgi.multithread": True, "wsgi.multiprocess": False,
            "wsgi.run_once": False, "CONTENT_LENGTH": str(len(body)),
        }  # fmt: skip
        for name, value in headers:
            key = name.decode().upper().replace("-", "_")
            if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
                environ[key] = value.decode()
            else:
                environ["HTTP_" + key] = value.decode()
        return environ

    def _answer(self, environ: dict[str, Any]) -> tuple[int, bytes]:
        got: list[Any] = []

        def start_response(status: str, headers: list[tuple[str, str]], *_: Any) -> Any:
            got.append(int(status.split()[0]))
            self.last_headers = [(k.lower().encode(), v.encode()) for k, v in headers]

        chunks = self.app(environ, start_response)
        try:
            body = b"".join(chunks)
        finally:
            getattr(chunks, "close", lambda: None)()
        return got[0], body

    def call(
        self, method: str, uri: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> tuple[int, bytes]:
        return self._answer(self._environ(method, uri, headers, body))

    def run(
        self, calls: list[tuple[str, str, list[tuple[bytes, bytes]], bytes]], expect: int
    ) -> None:
        environs = [self._environ(*call) for call in calls]
        for (method, uri, _, _), environ in zip(calls, environs, strict=True):
            status, answer = self._answer(environ)
            if status != expect:
                raise RuntimeError(f"{method} {uri}: {status} {answer[:200]!r}")


def _signed(
    kind: str, uri: str, key: PrivateKey, nonce: int
) -> tuple[str, list[tuple[bytes, bytes]], bytes]:
    signed = uri.encode() if kind == "get" else INVOICE_BODY
    signature = _sign(key, f"sess:{nonce}:{hashlib.sha256(signed).hexdigest()}")
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"x-session-nonce", str(nonce).encode()),
        (b"x-session-signature", signature.encode()),
    ]
    if kind == "post":
        headers += [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(INVOICE_BODY)).encode()),
        ]
        return "POST", headers, INVOICE_BODY
    return "GET", headers, b""


def _floor_app(
    framework: str, url: str, get_body: bytes, post_body: bytes, asynchronous: bool = False
) -> Any:
    """``bare_app.py``'s floor app on the same database: the sync one unless
    ``asynchronous`` (``--floor-async``: Litestar on PostgreSQL, the async driver awaited in
    async handlers, which has no write). Litestar's on a SQLite file runs on the event loop
    (``--floor-inline``), its fastest form there."""
    import bare_app

    if asynchronous:
        return bare_app.litestar_app(get_body, post_body, bare_app.AsyncFloor(url))
    if framework == "litestar":
        inline = url.startswith("sqlite")
        return bare_app.litestar_app(get_body, post_body, bare_app.Floor(url), inline=inline)
    return bare_app.flask_app(get_body, post_body, bare_app.Floor(url))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--framework", choices=("litestar", "flask", "flask-wsgi"), default="litestar"
    )
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--kinds", default="get,post")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--profile", help="write a cProfile of the measured calls here")
    parser.add_argument(
        "--floor-async", action="store_true",
        help="Litestar on PostgreSQL: the async floor (no write, so no post kind)",
    )  # fmt: skip
    parser.add_argument(
        "--postgres", default=os.environ.get("PAYCORE_BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    )
    args = parser.parse_args()
    if args.reps < 3:
        parser.error("--reps must be at least 3: one repetition's figure is noise")
    if args.requests < 1:
        parser.error("--requests must be at least 1")
    if args.floor_async and (
        args.framework != "litestar" or args.db != "postgresql" or "post" in args.kinds
    ):
        parser.error("--floor-async is Litestar's on PostgreSQL, for get, public and poll")
    if args.profile:  # cProfile sees one thread: the core's call made on the loop's own
        import anyio.to_thread

        async def inline(function: Any, *a: Any, **_: Any) -> Any:
            return function(*a)

        anyio.to_thread.run_sync = inline  # type: ignore[assignment]
        from paycore_flask.asgi import AsgiFront

        async def on_loop(self: Any, function: Any, *a: Any) -> Any:
            return function(*a)

        AsgiFront._on_thread = on_loop  # type: ignore[method-assign]
    with _database(args.db, args.postgres) as url:
        settings = Settings(
            database_url=url, auth_mode="strict", session_key_cap=4,
            prices={ETH_1: "3000"},
        )  # fmt: skip
        wsgi = args.framework == "flask-wsgi"
        framework = "flask" if wsgi else args.framework
        made = create_app(framework, settings, PREFIX)
        driver: Any = WsgiDriver(made) if wsgi else Driver(_asgi(args.framework, made))
        driver.start()
        owner = PrivateKey(hashlib.sha256(b"cpu-bench-owner").digest())
        key = _key(0)
        public_key = "0x" + key.public_key.format(compressed=False).hex()
        body = json.dumps({
            "ownerAddress": public_key_to_address(owner.public_key.format(compressed=False)),
            "publicKey": public_key, "signature": _sign(owner, public_key),
        }).encode()  # fmt: skip
        length = str(len(body)).encode()
        json_headers = [(b"content-type", b"application/json"), (b"content-length", length)]
        status, answer = driver.call("POST", PREFIX + "/auth/register-pubkey", json_headers, body)
        assert status == 200, answer
        nonce = 1
        method, headers, payload = _signed("post", PREFIX + "/invoice", key, nonce)
        status, created = driver.call(method, PREFIX + "/invoice", headers, payload)
        assert status == 201, created
        uri = f"{PREFIX}/invoice/{json.loads(created)['guid']}"
        nonce += 1
        method, headers, payload = _signed("get", uri, key, nonce)
        status, read = driver.call(method, uri, headers, payload)
        assert status == 200, read
        floor = _floor_app(framework, url, read, created, args.floor_async)
        floor_driver: Any = WsgiDriver(floor) if wsgi else Driver(_asgi(args.framework, floor))
        status, _ = driver.call("GET", uri, [(b"host", b"127.0.0.1:8000")], b"")
        tag = dict(driver.last_headers).get(b"etag", b"")
        counters = {"paycore": nonce, "floor": 0}  # the floors spend into one table
        each = args.requests + WARM_UP

        def signed_calls(kind: str, target: str, side: str) -> list[Call]:
            calls = []
            for _ in range(each):
                counters[side] += 1
                method, headers, payload = _signed(kind, target, key, counters[side])
                calls.append((method, target, headers, payload))
            return calls

        def calls_for(kind: str, side: str, target: str, signed: bool) -> list[Call]:
            if signed:
                return signed_calls(kind, target, "paycore" if side == "paycore" else "floor")
            headers = [(b"host", b"127.0.0.1:8000")]
            if kind == "poll":
                headers.append((b"if-none-match", tag))
            return [("GET", target, headers, b"")] * each

        def ms(runs: list[tuple[float, float]], which: int) -> float:
            """The median run's figure (0: CPU, 1: wall) in ms a request."""
            return 1e3 * statistics.median(run[which] for run in runs) / args.requests

        for kind in args.kinds.split(","):
            expect = {"get": 200, "post": 201, "public": 200, "poll": 304}[kind]
            # side -> (driver, the target of its calls, whether its calls are signed)
            sides: dict[str, tuple[Any, str, bool]]
            if kind in ("public", "poll"):  # unsigned: the checkout page's poll
                sides = {"paycore": (driver, uri, False), "floor": (floor_driver, uri, False)}
            else:
                target = uri if kind == "get" else PREFIX + "/invoice"
                work = FLOOR_WITH[kind]
                fuller = (
                    uri.replace("/invoice/", "/read/invoice/", 1) if kind == "get"
                    else PREFIX + "/write/invoice"
                )  # fmt: skip
                sides = {
                    "paycore": (driver, target, True),
                    "floor": (floor_driver, target, True),
                    f"floor_with_{work}": (floor_driver, fuller, True),
                }

            samples: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
            counted = 0
            for rep in range(args.reps):
                # Every side's calls are made (and signed) before any clock starts.
                prepared = {
                    side: calls_for(kind, side, target, signed)
                    for side, (_drive, target, signed) in sides.items()
                }
                for side, (drive, _target, _signed_side) in sides.items():
                    calls = prepared[side]
                    drive.run(calls[:WARM_UP], expect)
                    profile = (
                        cProfile.Profile(time.process_time)
                        if args.profile and side == "paycore" and rep == 0 else None
                    )  # fmt: skip
                    cpu0, wall0 = time.process_time(), time.perf_counter()
                    if profile:
                        profile.enable()
                    drive.run(calls[WARM_UP:], expect)
                    if profile:
                        profile.disable()
                    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
                    samples[side].append((cpu, wall))
                    if profile:
                        profile.dump_stats(f"{args.profile}.{kind}")
                        counted = pstats.Stats(profile).total_calls  # type: ignore[attr-defined]
                    print(
                        f"signed_cpu_bench: {kind} rep {rep + 1} {side}: "
                        f"{1e3 * cpu / args.requests:.3f} ms CPU a request",
                        file=sys.stderr, flush=True,
                    )  # fmt: skip

            line: dict[str, Any] = {
                "framework": args.framework, "db": args.db, "kind": kind, "reps": args.reps,
                "stat": "median", "cpu_ms": round(ms(samples["paycore"], 0), 3),
                "wall_ms": round(ms(samples["paycore"], 1), 3),
            }  # fmt: skip
            for side in sides:
                if side == "paycore":
                    continue
                line[f"{side}_cpu_ms"] = round(ms(samples[side], 0), 3)
                line[f"{side}_wall_ms"] = round(ms(samples[side], 1), 3)
                ratio = "cpu_ratio" + side.removeprefix("floor")
                line[ratio] = round(ms(samples[side], 0) / ms(samples["paycore"], 0), 2)
            if args.profile:
                # Python function calls per request: a count the load does not disturb,
                # unlike the CPU figures (which the profile itself inflates).
                line["calls_per_request"] = round(counted / args.requests, 1)
            print(json.dumps(line), flush=True)
        driver.stop()
        floor_driver.stop()


if __name__ == "__main__":
    main()
