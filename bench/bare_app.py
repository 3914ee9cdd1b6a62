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
- ``floor --floor-async`` (Litestar on PostgreSQL only): the same work at the libraries'
  best on an async framework -- psycopg's ``AsyncConnection`` (autocommit) awaited in async
  handlers, from a small per-event-loop list of idle connections, no thread hop; the key
  recovery stays inline in the handler. Its fuller signed-GET floor makes the nonce's
  ``INSERT`` and the invoice's ``SELECT`` one statement (a data-modifying CTE), one round
  trip as paycore's signed read is, not two (until the eleventh sitting it made two, and
  paycore's one-statement read looked as fast as that floor). ``http_bench.py`` measures it
  next to the sync floor and keeps the faster as the floor (issue 30). SQLite has no async
  driver (aiosqlite runs sqlite3 in a thread, the hop the sync floor already makes), and
  Flask has no event loop of its own, so there the floor is the sync one: in the thread
  pool, and for Litestar on SQLite also on the loop:
- ``floor --floor-inline`` (Litestar on a SQLite file only): the sync floor's very handlers
  and ``Floor`` run on the event loop itself -- the GETs with ``sync_to_thread=False``, the
  POSTs calling ``spend`` directly, no ``to_thread`` -- so no thread hop at all. On a SQLite
  file the statements' wait (the WAL append and its fsync) is short, and on one core the
  hop's wake-ups (the loop handing off to a pool thread and being woken back) cost more
  than the wait they let the loop overlap; ``http_bench.py`` measures this floor beside the
  threaded one and keeps the faster per kind (issue 30: the libraries at their best). On
  PostgreSQL a blocking round trip on the loop would stall every other request; there the
  async floor is the loop's.

    python bench/bare_app.py --framework litestar --port 8001 --bodies bodies.json \\
        [--floor DATABASE_URL [--floor-async | --floor-inline]]

``bodies.json``: ``{"get": "<GET /paycore/invoice/{guid} answer>", "post": "<POST
/paycore/invoice answer>"}``. Without ``--floor`` the app is ``bare``.
"""

# No ``from __future__ import annotations``: Litestar reads the handlers' annotations, and
# the framework is imported inside the factory, so they must be evaluated where defined.
import argparse
import asyncio
import contextlib
import hashlib
import json
import sqlite3
import threading
import time
import uuid
import weakref
from collections.abc import AsyncIterator, Mapping
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


#: The floor with the write's copy of paycore's invoice table (``Floor._copy_invoice_table``).
WRITE_TABLE = "bench_floor_invoices"
JSON_COLUMNS = frozenset(("accepted_tokens", "data", "payments", "checkout"))


def invoice_row(body: bytes, owner: str) -> dict[str, Any]:
    """The least an invoice's row can be made from a ``POST /invoice`` body: its JSON
    parsed, a random guid, the times and the columns as given, nothing checked, priced or
    derived (the deposit address is the body's)."""
    fields = json.loads(body)
    now = int(time.time())
    tokens = fields.get("acceptedTokens") or ["1:0x0000000000000000000000000000000000000000"]
    description = str(fields.get("description", ""))
    return {
        "guid": str(uuid.uuid4()),
        "created_at": now,
        "deadline": now + int(fields.get("deadlineSecs", 3600)),
        "status": "init",
        "value": str(fields.get("value", "0")),
        "token": tokens[0].split(":", 1)[-1],
        "chain_id": int(fields.get("chainId", 1)),
        "description": description,
        "address": str(fields.get("address", "")),
        "owner": owner,
        "accepted_tokens": json.dumps(tokens),
        "data": json.dumps(fields.get("data", {})),
        "paid_amount": "0",
        "payments": "[]",
        "vs_currency": str(fields.get("vsCurrency", "usd")),
        "checkout": json.dumps({}),
        "search_text": description.lower(),
    }


# -- the floor: one signature recovery and one durable write -----------------------------------
def recover(headers: Mapping[str, str], signed: bytes) -> tuple[str, int] | None:
    """The session key's address and the nonce it signed over ``signed``: the CPU half of a
    signed request, the same for both floors; None without the session headers."""
    nonce, signature = headers.get("x-session-nonce"), headers.get("x-session-signature")
    if not nonce or not signature:
        return None
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
    return "0x" + keccak.new(data=point, digest_bits=256).digest()[-20:].hex(), int(nonce)


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
            self._copy_invoice_table()

    def _copy_invoice_table(self) -> None:
        """``bench_floor_invoices``: paycore's invoice table as the database has it -- its
        columns and its B-tree indexes -- without the text search's index (a GIN trigram
        index on PostgreSQL, FTS5 triggers on SQLite), which a shop could do without."""
        connection = self._connection()
        if self._sqlite:
            found = connection.execute(
                "SELECT type, sql FROM sqlite_master WHERE tbl_name = 'paycore_invoices' "
                "AND type IN ('table', 'index') AND sql IS NOT NULL ORDER BY type = 'index'"
            ).fetchall()
            for kind, sql in found:
                word = "TABLE " if kind == "table" else "INDEX "
                copy = sql.replace("paycore_invoices", WRITE_TABLE)
                connection.execute(copy.replace(word, word + "IF NOT EXISTS ", 1))
            return
        connection.execute(
            f"CREATE TABLE IF NOT EXISTS {WRITE_TABLE} (LIKE paycore_invoices INCLUDING ALL)"
        )
        for (name,) in connection.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexdef ILIKE %s",
            (WRITE_TABLE, "%USING gin%"),
        ).fetchall():
            connection.execute(f'DROP INDEX IF EXISTS "{name}"')

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

    def spend(
        self, headers: Mapping[str, str], signed: bytes, body: bytes | None, invoice: bool = False
    ) -> bool:
        """Verify the session signature over ``signed`` and spend its nonce (storing
        ``body`` with it: as it is, or with ``invoice`` as an invoice's row, see
        :func:`invoice_row`); False for a bad signature or a replay."""
        params = recover(headers, signed)
        if params is None:
            return False
        placeholders = "?, ?" if self._sqlite else "%s, %s"
        nonce = f"INSERT INTO bench_floor_nonces (address, nonce) VALUES ({placeholders})"
        if body is None:
            return self._durably([(nonce, params)])
        if invoice:
            row = invoice_row(body, params[0])
            values = ", ".join(
                "?" if self._sqlite else "%s::json" if name in JSON_COLUMNS else "%s"
                for name in row
            )
            write = f"INSERT INTO {WRITE_TABLE} ({', '.join(row)}) VALUES ({values})"
            return self._durably([(nonce, params), (write, tuple(row.values()))])
        doc = f"INSERT INTO bench_floor_docs VALUES ({'?' if self._sqlite else '%s'})"
        return self._durably([(nonce, params), (doc, (body if self._sqlite else body.decode(),))])

    def _durably(self, statements: list[tuple[str, tuple[Any, ...]]]) -> bool:
        """Run ``statements`` as one durable transaction (one alone: autocommitted), with
        this process's writer lock on SQLite; False when a primary key refused a replay."""
        connection = self._connection()
        try:
            with self._locked():
                if len(statements) == 1:
                    connection.execute(*statements[0])
                elif self._sqlite:
                    connection.execute("BEGIN IMMEDIATE")
                    try:
                        for statement in statements:
                            connection.execute(*statement)
                        connection.execute("COMMIT")
                    except BaseException:
                        connection.execute("ROLLBACK")
                        raise
                else:
                    with connection.transaction():
                        for statement in statements:
                            connection.execute(*statement)
        except Exception as error:  # the primary key refused a replay
            if "unique" in str(error).lower() or "duplicate" in str(error).lower():
                return False
            raise
        return True

    def spend_and_read(self, headers: Mapping[str, str], signed: bytes, guid: str) -> int:
        """The signed read's floor: the nonce spent, then the invoice read -- on PostgreSQL
        as one statement (a data-modifying CTE), one round trip as paycore's signed read
        is; on a SQLite file the two autocommitted statements, with no round trip to save.
        401 for a bad signature or a replay, 404 for no such invoice, else 200."""
        if self._sqlite:
            if not self.spend(headers, signed, None):
                return 401
            return 200 if self.read(guid) else 404
        from psycopg.errors import UniqueViolation

        params = recover(headers, signed)
        if params is None:
            return 401
        try:
            found = self._connection().execute(_SPEND_AND_READ, (*params, guid)).fetchone()
        except UniqueViolation:
            return 401
        return 200 if found is not None else 404

    def read(self, guid: str) -> bool:
        """The public read's floor: the invoice's row by its unique guid, one autocommitted
        statement on a connection of this thread; whether it was found."""
        connection = self._connection()
        placeholder = "?" if self._sqlite else "%s"
        row = connection.execute(
            f"SELECT * FROM paycore_invoices WHERE guid = {placeholder}", (guid,)
        ).fetchone()
        return row is not None


#: A signed read's nonce and invoice in one PostgreSQL statement (the floors' with the read).
_SPEND_AND_READ = (
    "WITH spent AS (INSERT INTO bench_floor_nonces (address, nonce) VALUES (%s, %s) "
    "RETURNING 1) SELECT i.* FROM paycore_invoices AS i, spent WHERE i.guid = %s"
)


class AsyncFloor:
    """The PostgreSQL floor with psycopg's ``AsyncConnection`` (autocommit) awaited in async
    handlers on the event loop: no thread hop. The same statements as ``Floor``'s; each
    event loop keeps a list of idle connections, takes one per request (opening a new one
    when none is idle, so there are as many as requests in flight) and puts it back after.
    The key recovery (``recover``) runs inline in the handler, on the loop."""

    def __init__(self, url: str) -> None:
        import psycopg

        if url.startswith("sqlite"):
            raise ValueError("the async floor is PostgreSQL's: SQLite has no async driver")
        self._dsn = url.replace("postgresql+psycopg://", "postgresql://")
        self._idle: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[Any]] = (
            weakref.WeakKeyDictionary()
        )
        with psycopg.connect(self._dsn, autocommit=True) as connection:
            for statement in FLOOR_TABLES:
                connection.execute(statement)

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[Any]:
        from psycopg import AsyncConnection
        from psycopg.pq import TransactionStatus

        idle = self._idle.setdefault(asyncio.get_running_loop(), [])
        connection = idle.pop() if idle else None
        if connection is None:
            connection = await AsyncConnection.connect(self._dsn, autocommit=True)
        try:
            yield connection
        finally:  # back to the list unless a failure (or a cancel) left it mid-statement
            if connection.info.transaction_status == TransactionStatus.IDLE:
                idle.append(connection)
            else:
                await connection.close()

    async def spend(self, headers: Mapping[str, str], signed: bytes, body: bytes | None) -> bool:
        """``Floor.spend`` on the event loop: the recovery inline, the statements awaited."""
        from psycopg.errors import UniqueViolation

        params = recover(headers, signed)
        if params is None:
            return False
        insert = "INSERT INTO bench_floor_nonces (address, nonce) VALUES (%s, %s)"
        try:
            async with self._connection() as connection:
                if body is None:
                    await connection.execute(insert, params)
                else:
                    async with connection.transaction():
                        await connection.execute(insert, params)
                        await connection.execute(
                            "INSERT INTO bench_floor_docs VALUES (%s)", (body.decode(),)
                        )
        except UniqueViolation:  # the primary key refused a replay
            return False
        return True

    async def spend_and_read(self, headers: Mapping[str, str], signed: bytes, guid: str) -> int:
        """A signed read's floor at the driver's best: the nonce's ``INSERT`` and the
        invoice's indexed ``SELECT`` as one autocommitted statement (a data-modifying CTE),
        one round trip as paycore's own signed read makes them. 401 for a bad signature or
        a replay (the primary key refused the statement whole), 404 for no such invoice
        (the nonce spent all the same), else 200."""
        from psycopg.errors import UniqueViolation

        params = recover(headers, signed)
        if params is None:
            return 401
        try:
            async with self._connection() as connection:
                cursor = await connection.execute(_SPEND_AND_READ, (*params, guid))
                return 200 if await cursor.fetchone() is not None else 404
        except UniqueViolation:
            return 401

    async def read(self, guid: str) -> bool:
        """``Floor.read`` on the event loop: one autocommitted, indexed ``SELECT``."""
        async with self._connection() as connection:
            cursor = await connection.execute(
                "SELECT * FROM paycore_invoices WHERE guid = %s", (guid,)
            )
            return await cursor.fetchone() is not None


# -- the apps ----------------------------------------------------------------------------------
def litestar_app(
    get_body: bytes, post_body: bytes, floor: "Floor | AsyncFloor | None", inline: bool = False
) -> Any:
    """The Litestar app: ``bare`` without a floor, the async floor's handlers with an
    ``AsyncFloor``, else the sync floor's -- in the thread pool, or with ``inline`` on the
    event loop itself (``--floor-inline``): the same handlers, only where they run differs."""
    from litestar import Litestar, Request, Response, get, post

    def target(request: Request[Any, Any, Any]) -> bytes:  # what a signed GET signed
        query = request.scope["query_string"]
        return request.scope["raw_path"] + (b"?" + query if query else b"")

    if isinstance(floor, AsyncFloor):
        aspend, alookup = floor.spend, floor.read

        @get(PREFIX + "/invoice/{guid:str}")
        async def read(guid: str, request: Request[Any, Any, Any]) -> Response[bytes]:
            if "x-session-signature" not in request.headers:  # public: one SELECT
                if not await alookup(guid):
                    return Response(b"not found", status_code=404)
                if "if-none-match" in request.headers:
                    return Response(b"", status_code=304)
                return Response(get_body, media_type="application/json")
            if not await aspend(request.headers, target(request), None):
                return Response(b"refused", status_code=401)
            return Response(get_body, media_type="application/json")

        @get(PREFIX + "/read/invoice/{guid:str}")
        async def spend_and_read(guid: str, request: Request[Any, Any, Any]) -> Response[bytes]:
            found = await floor.spend_and_read(request.headers, target(request), guid)
            if found == 401:
                return Response(b"refused", status_code=401)
            if found == 404:
                return Response(b"not found", status_code=404)
            return Response(get_body, media_type="application/json")

        @post(PREFIX + "/invoice")
        async def create(request: Request[Any, Any, Any]) -> Response[bytes]:
            body = await request.body()
            if not await aspend(request.headers, body, body):
                return Response(b"refused", status_code=401)
            return Response(post_body, media_type="application/json", status_code=201)

    elif floor is None:

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
        threaded = not inline
        if inline:  # on the loop: the call made right there, no thread hop

            async def run(function: Any, *args: Any) -> Any:
                return function(*args)

        else:
            from anyio.to_thread import run_sync as run

        @get(PREFIX + "/invoice/{guid:str}", sync_to_thread=threaded)
        def read(guid: str, request: Request[Any, Any, Any]) -> Response[bytes]:
            if "x-session-signature" not in request.headers:  # public: one SELECT
                if not lookup(guid):
                    return Response(b"not found", status_code=404)
                if "if-none-match" in request.headers:
                    return Response(b"", status_code=304)
                return Response(get_body, media_type="application/json")
            if not spend(request.headers, target(request), None):
                return Response(b"refused", status_code=401)
            return Response(get_body, media_type="application/json")

        @get(PREFIX + "/read/invoice/{guid:str}", sync_to_thread=threaded)
        def spend_and_read(guid: str, request: Request[Any, Any, Any]) -> Response[bytes]:
            found = floor.spend_and_read(request.headers, target(request), guid)
            if found == 401:
                return Response(b"refused", status_code=401)
            if found == 404:
                return Response(b"not found", status_code=404)
            return Response(get_body, media_type="application/json")

        @post(PREFIX + "/invoice")
        async def create(request: Request[Any, Any, Any]) -> Response[bytes]:
            body = await request.body()
            if not await run(spend, request.headers, body, body):
                return Response(b"refused", status_code=401)
            return Response(post_body, media_type="application/json", status_code=201)

        @post(PREFIX + "/write/invoice")
        async def spend_and_write(request: Request[Any, Any, Any]) -> Response[bytes]:
            body = await request.body()
            if not await run(spend, request.headers, body, body, True):
                return Response(b"refused", status_code=401)
            return Response(post_body, media_type="application/json", status_code=201)

    @get("/health")
    async def health() -> dict[str, bool]:
        return {"ok": True}

    handlers = [read, create, health] + ([spend_and_read] if floor is not None else [])
    if isinstance(floor, Floor):
        handlers.append(spend_and_write)
    return Litestar(handlers, openapi_config=None, logging_config=None)


def flask_app(get_body: bytes, post_body: bytes, floor: "Floor | None") -> Any:
    from flask import Flask, Response, request

    app = Flask("bare")

    def signed(body: bytes | None, invoice: bool = False) -> bool:
        if floor is None:
            return True
        target = request.environ.get("RAW_URI") or request.full_path.rstrip("?")
        covered = body if body is not None else target.encode("latin-1")
        return floor.spend(request.headers, covered, body, invoice)

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
        if floor is None:
            return Response(get_body, mimetype="application/json")
        target = request.environ.get("RAW_URI") or request.full_path.rstrip("?")
        found = floor.spend_and_read(request.headers, target.encode("latin-1"), guid)
        if found == 401:
            return Response(b"refused", status=401)
        if found == 404:
            return Response(b"not found", status=404)
        return Response(get_body, mimetype="application/json")

    @app.post(PREFIX + "/invoice")
    def create() -> Response:
        body = request.get_data()
        if not signed(body):
            return Response(b"refused", status=401)
        return Response(post_body, status=201, mimetype="application/json")

    @app.post(PREFIX + "/write/invoice")
    def spend_and_write() -> Response:
        if not signed(request.get_data(), invoice=True):
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
    parser.add_argument(
        "--floor-async",
        action="store_true",
        help="with --floor on PostgreSQL under Litestar: the async driver in async handlers",
    )
    parser.add_argument(
        "--floor-inline",
        action="store_true",
        help="with --floor on SQLite under Litestar: the sync floor's work on the event loop",
    )
    args = parser.parse_args()
    if args.floor_async and (
        args.framework != "litestar" or not args.floor or args.floor.startswith("sqlite")
    ):
        parser.error("--floor-async is Litestar's, with a PostgreSQL --floor")
    if args.floor_inline and (
        args.framework != "litestar" or not args.floor or not args.floor.startswith("sqlite")
    ):
        parser.error("--floor-inline is Litestar's, with a SQLite --floor")
    with open(args.bodies, encoding="utf-8") as file:
        bodies = json.load(file)
    get_body, post_body = bodies["get"].encode(), bodies["post"].encode()

    def build() -> Any:  # in the worker, after the fork: its own connections
        if args.floor_async:
            return litestar_app(get_body, post_body, AsyncFloor(args.floor))
        floor = Floor(args.floor) if args.floor else None
        if args.framework == "litestar":
            return litestar_app(get_body, post_body, floor, inline=args.floor_inline)
        return flask_app(get_body, post_body, floor)

    gunicorn_server(args.framework, build, host="127.0.0.1", port=args.port).run()


if __name__ == "__main__":
    main()
