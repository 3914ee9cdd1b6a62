"""The http bench's ceilings: bare apps of the same framework, under the same server.

``paycore serve`` runs its app under gunicorn (paycore's uvicorn worker class; Flask behind
its ASGI front); this module builds two plain apps of the same framework and runs them
under that very server, built by the same ``paycore.runtime.serve.gunicorn_server``, so the
ratio paycore / ceiling is what paycore itself costs on that server.

- ``bare``: the two measured endpoints answered with fixed bytes -- the very bodies paycore
  answered them with, captured by ``http_bench.py`` -- and nothing else: no signature check,
  no storage.
- ``floor``: the same endpoints doing the least any replay-proof signed request must do,
  written directly against the libraries: read the session headers, hash what was signed,
  recover the secp256k1 key (coincurve), derive its address, and record the nonce durably in
  one statement on the same database (``INSERT`` of (address, nonce) whose primary key
  refuses a replay; for the POST, the body stored in the same transaction), then answer the
  same bytes. It runs in the framework's thread pool as paycore's handlers do. The gap
  between ``bare`` and ``floor`` is the price of signing and durability on this machine, the
  gap between ``floor`` and paycore is paycore's own. An unsigned ``GET`` (no session
  headers: the checkout page's poll) is the public read's floor: one indexed ``SELECT`` of the
  invoice's row by guid on the same driver, autocommitted (no ``BEGIN``/``COMMIT`` round
  trips, no write lock), then the same bytes. ``GET /paycore/read/invoice/{guid}`` on the
  floor app is the signed GET's fuller floor: the nonce spent as above, then that same
  ``SELECT`` of the invoice it answers (a signed read has to read what it returns).

    python bench/bare_app.py --framework litestar --port 8001 --bodies bodies.json \\
        [--floor DATABASE_URL]

``bodies.json``: ``{"get": "<GET /paycore/invoice/{guid} answer>", "post": "<POST
/paycore/invoice answer>"}``. Without ``--floor`` the app is ``bare``.
"""

# No ``from __future__ import annotations``: Litestar reads the handlers' annotations, and
# the framework is imported inside the factory, so they must be evaluated where defined.
import argparse
import contextlib
import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from coincurve import PublicKey
from Crypto.Hash import keccak

from paycore.runtime.serve import gunicorn_server

PREFIX = "/paycore"
FLOOR_TABLES = (
    "CREATE TABLE IF NOT EXISTS bench_floor_nonces "
    "(address VARCHAR(42) NOT NULL, nonce BIGINT NOT NULL, PRIMARY KEY (address, nonce))",
    "CREATE TABLE IF NOT EXISTS bench_floor_docs (body TEXT NOT NULL)",
)


# -- the floor: one signature recovery and one durable write -----------------------------------
class Floor:
    """Per-thread connections to the bench's database, in autocommit: a statement is its own
    durable transaction. SQLite's writers queue on a lock of this process, as paycore's do."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._local = threading.local()
        self._sqlite = url.startswith("sqlite")
        self._write_lock = threading.Lock() if self._sqlite else None
        with self._locked():
            for statement in FLOOR_TABLES:
                self._connection().execute(statement)

    def _connection(self) -> Any:
        found = getattr(self._local, "connection", None)
        if found is None:
            if self._sqlite:
                path = unquote(urlsplit(self._url).path)[1:]
                found = sqlite3.connect(path, isolation_level=None, timeout=30)
                found.execute("PRAGMA busy_timeout=30000")
                found.execute("PRAGMA journal_mode=WAL")
            else:
                import psycopg

                dsn = self._url.replace("postgresql+psycopg://", "postgresql://")
                found = psycopg.connect(dsn, autocommit=True)
            self._local.connection = found
        return found

    def _locked(self) -> Any:
        return self._write_lock or contextlib.nullcontext()

    def spend(self, headers: Mapping[str, str], signed: bytes, body: bytes | None) -> bool:
        """Verify the session signature over ``signed`` and spend its nonce (storing
        ``body`` with it); False for a bad signature or a replay."""
        nonce, signature = headers.get("x-session-nonce"), headers.get("x-session-signature")
        if not nonce or not signature:
            return False
        text = f"sess:{nonce}:{hashlib.sha256(signed).hexdigest()}".encode()
        digest = keccak.new(
            data=b"\x19Ethereum Signed Message:\n" + str(len(text)).encode() + text,
            digest_bits=256,
        ).digest()
        raw = bytes.fromhex(signature[2:])
        key = PublicKey.from_signature_and_message(
            raw[:64] + bytes((raw[64] - 27,)), digest, hasher=None
        )
        point = key.format(compressed=False)[1:]
        address = "0x" + keccak.new(data=point, digest_bits=256).digest()[-20:].hex()
        params = (address, int(nonce))
        connection = self._connection()
        placeholders = "?, ?" if self._sqlite else "%s, %s"
        insert = f"INSERT INTO bench_floor_nonces (address, nonce) VALUES ({placeholders})"
        try:
            with self._locked():
                if body is None:
                    connection.execute(insert, params)
                elif self._sqlite:
                    connection.execute("BEGIN IMMEDIATE")
                    try:
                        connection.execute(insert, params)
                        connection.execute("INSERT INTO bench_floor_docs VALUES (?)", (body,))
                        connection.execute("COMMIT")
                    except BaseException:
                        connection.execute("ROLLBACK")
                        raise
                else:
                    with connection.transaction():
                        connection.execute(insert, params)
                        connection.execute(
                            "INSERT INTO bench_floor_docs VALUES (%s)", (body.decode(),)
                        )
        except Exception as error:  # the primary key refused a replay
            if "unique" in str(error).lower() or "duplicate" in str(error).lower():
                return False
            raise
        return True

    def read(self, guid: str) -> bool:
        """The public read's floor: the invoice's row by its unique guid, one autocommitted
        statement on a connection of this thread; whether it was found."""
        connection = self._connection()
        placeholder = "?" if self._sqlite else "%s"
        row = connection.execute(
            f"SELECT * FROM paycore_invoices WHERE guid = {placeholder}", (guid,)
        ).fetchone()
        return row is not None


# -- the apps ----------------------------------------------------------------------------------
def litestar_app(get_body: bytes, post_body: bytes, floor: "Floor | None") -> Any:
    from litestar import Litestar, Request, Response, get, post

    if floor is None:

        @get(PREFIX + "/invoice/{guid:str}")
        async def read(guid: str, request: Request[Any, Any, Any]) -> Response[bytes]:
            if "if-none-match" in request.headers:  # a conditional poll: unchanged
                return Response(b"", status_code=304)
            return Response(get_body, media_type="application/json")

        @post(PREFIX + "/invoice")
        async def create(request: Request[Any, Any, Any]) -> Response[bytes]:
            await request.body()  # received in full, as paycore's handler does
            return Response(post_body, media_type="application/json", status_code=201)

    else:
        spend, lookup = floor.spend, floor.read

        @get(PREFIX + "/invoice/{guid:str}", sync_to_thread=True)
        def read(guid: str, request: Request[Any, Any, Any]) -> Response[bytes]:
            if "x-session-signature" not in request.headers:  # public: one SELECT
                if not lookup(guid):
                    return Response(b"not found", status_code=404)
                if "if-none-match" in request.headers:
                    return Response(b"", status_code=304)
                return Response(get_body, media_type="application/json")
            target = request.scope["raw_path"] + (
                b"?" + request.scope["query_string"] if request.scope["query_string"] else b""
            )
            if not spend(request.headers, target, None):
                return Response(b"refused", status_code=401)
            return Response(get_body, media_type="application/json")

        @get(PREFIX + "/read/invoice/{guid:str}", sync_to_thread=True)
        def spend_and_read(guid: str, request: Request[Any, Any, Any]) -> Response[bytes]:
            target = request.scope["raw_path"] + (
                b"?" + request.scope["query_string"] if request.scope["query_string"] else b""
            )
            if not spend(request.headers, target, None):
                return Response(b"refused", status_code=401)
            if not lookup(guid):
                return Response(b"not found", status_code=404)
            return Response(get_body, media_type="application/json")

        @post(PREFIX + "/invoice")
        async def create(request: Request[Any, Any, Any]) -> Response[bytes]:
            from anyio import to_thread

            body = await request.body()
            if not await to_thread.run_sync(spend, request.headers, body, body):
                return Response(b"refused", status_code=401)
            return Response(post_body, media_type="application/json", status_code=201)

    @get("/health")
    async def health() -> dict[str, bool]:
        return {"ok": True}

    handlers = [read, create, health] + ([spend_and_read] if floor is not None else [])
    return Litestar(handlers, openapi_config=None, logging_config=None)


def flask_app(get_body: bytes, post_body: bytes, floor: "Floor | None") -> Any:
    from flask import Flask, Response, request

    app = Flask("bare")

    def signed(body: bytes | None) -> bool:
        if floor is None:
            return True
        target = request.environ.get("RAW_URI") or request.full_path.rstrip("?")
        covered = body if body is not None else target.encode("latin-1")
        return floor.spend(request.headers, covered, body)

    @app.get(PREFIX + "/invoice/<guid>")
    def read(guid: str) -> Response:
        if "x-session-signature" not in request.headers:
            if floor is not None and not floor.read(guid):  # public: one SELECT
                return Response(b"not found", status=404)
            if "if-none-match" in request.headers:  # a conditional poll: unchanged
                return Response(b"", status=304)
            return Response(get_body, mimetype="application/json")
        if not signed(None):
            return Response(b"refused", status=401)
        return Response(get_body, mimetype="application/json")

    @app.get(PREFIX + "/read/invoice/<guid>")
    def spend_and_read(guid: str) -> Response:
        if not signed(None):
            return Response(b"refused", status=401)
        if floor is not None and not floor.read(guid):
            return Response(b"not found", status=404)
        return Response(get_body, mimetype="application/json")

    @app.post(PREFIX + "/invoice")
    def create() -> Response:
        body = request.get_data()
        if not signed(body):
            return Response(b"refused", status=401)
        return Response(post_body, status=201, mimetype="application/json")

    @app.get("/health")
    def health() -> dict[str, bool]:
        return {"ok": True}

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--framework", choices=("litestar", "flask"), required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--bodies", required=True, help="JSON file with the two answers")
    parser.add_argument("--floor", help="database URL: serve the floor app instead of bare")
    args = parser.parse_args()
    with open(args.bodies, encoding="utf-8") as file:
        bodies = json.load(file)
    get_body, post_body = bodies["get"].encode(), bodies["post"].encode()
    factories: dict[str, Callable[[bytes, bytes, Floor | None], Any]] = {
        "litestar": litestar_app,
        "flask": flask_app,
    }
    factory = factories[args.framework]

    def build() -> Any:  # in the worker, after the fork: its own connections
        floor = Floor(args.floor) if args.floor else None
        return factory(get_body, post_body, floor)

    gunicorn_server(args.framework, build, host="127.0.0.1", port=args.port).run()


if __name__ == "__main__":
    main()
