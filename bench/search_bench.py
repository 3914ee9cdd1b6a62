"""The dashboard's reads at a million invoices: invoice search (an order id in ``data``, a
word of the descriptions, a rare customer id, a status over a week recent or old) and the
stats of 30 days, on PostgreSQL and on a SQLite file, each against its floor.

The floor is one indexed read by guid on the same store and driver, in a transaction as
the searched page is (``tx.get_invoice``): what the cheapest possible answer costs there.
Each figure is what ``GET /invoices`` with filters or ``GET /stats`` costs below HTTP:
``Gateway.search.page`` (the page of 50 by cursor ``first`` and the count of matches up to
its cap, in one transaction) or ``Gateway.search.stats``.

Rows are bulk-loaded into a freshly migrated schema (PostgreSQL ``COPY``, with the trigram
index built after the load rather than row by row; SQLite ``executemany`` in one
transaction), then analysed. 90% of the invoices are the measured owner's, spread evenly
over a year: 60% paid, 25% expired, 10% open, 5% partly paid; three tokens on two chains;
descriptions from a small vocabulary; ``data`` holds a unique ``orderId`` and one of 5,000
customer ids.

Every figure runs ``--inner`` times per repetition and the median call is the repetition's
figure; ``--reps`` repetitions are interleaved (each figure on every store, floor among
them, then the next figure), and the median repetition is reported with its ratio to the
floor's. Output: one JSON object per line on stdout, progress on stderr.

    python bench/search_bench.py [--size 1000000] [--sqlite-size 1000000] [--reps 3]
                                 [--inner 7] [--postgres-url postgresql://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import json
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL

from paycore import Gateway, Settings
from paycore.accounting.search import invoice_filter
from paycore.storage.search import search_text
from paycore_storage import SqlStorage
from paycore_storage.engine import database_url
from paycore_storage.tables import SEARCH_TEXT_INDEX

OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
OTHER = "0x" + "77" * 20
START = 1_735_689_600  # 2025-01-01, UTC
YEAR = 365 * 86_400
DAY = 86_400
DEADLINE = 4_000_000_000
TOKENS = [
    (1, "0x" + "a1" * 20),
    (1, "0x0000000000000000000000000000000000000000"),
    (137, "0x" + "b2" * 20),
]
WORDS = ["coffee", "mug", "tea", "plate", "spoon", "kettle", "filter", "beans"]
STATUSES = ["paid"] * 12 + ["expired"] * 5 + ["init"] * 2 + ["partialPaid"]
COLUMNS = (
    "seq, guid, created_at, deadline, status, value, token, chain_id, description, address,"
    " owner, accepted_tokens, data, paid_amount, payments, vs_currency, search_text"
)


def _log(line: str) -> None:
    print(f"search_bench: {line}", file=sys.stderr, flush=True)


def _guid(n: int) -> str:
    return str(uuid.UUID(int=(n * 0x9E3779B97F4A7C15F39CC0605CEDC835) % (1 << 128)))


def rows(size: int) -> Iterator[tuple[Any, ...]]:
    for n in range(size):
        chain, token = TOKENS[n % 3]
        status = STATUSES[(n * 7) % len(STATUSES)]
        description = f"Order of {WORDS[n % 8]} and {WORDS[(n // 8) % 8]}"
        data = {"orderId": f"ORD-{n:07d}", "customer": f"cust{n % 5000}"}
        paid = "0" if status == "init" else ("12.5" if status == "partialPaid" else "25.01")
        yield (
            n + 1,
            _guid(n),
            START + (n * YEAR) // size,
            DEADLINE,
            status,
            "25.01",
            f"{chain}:{token}",
            chain,
            description,
            "0x" + f"{n + 1:040x}",
            OTHER if n % 10 == 9 else OWNER,
            json.dumps([f"{chain}:{token}"]),
            json.dumps(data),
            paid,
            "[]",
            "usd",
            search_text(description, data),
        )


_INDEX_DEF = (
    "SELECT indexdef FROM pg_indexes WHERE indexname = %s AND schemaname = current_schema()"
)


def load_postgres(url: URL, size: int) -> None:
    import psycopg

    conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo) as connection, connection.cursor() as cursor:
        cursor.execute(_INDEX_DEF, (SEARCH_TEXT_INDEX,))
        found = cursor.fetchone()
        if found is not None:  # built once after the load, not row by row
            cursor.execute(f"DROP INDEX {SEARCH_TEXT_INDEX}")
        with cursor.copy(f"COPY paycore_invoices ({COLUMNS}) FROM STDIN") as copy:
            for row in rows(size):
                copy.write_row(row)
        cursor.execute("SELECT setval('paycore_invoices_seq_seq', %s)", (size,))
        if found is not None:
            cursor.execute(found[0])
        connection.commit()
        connection.autocommit = True
        cursor.execute("VACUUM ANALYZE paycore_invoices")


def load_sqlite(path: str, size: int) -> None:
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA synchronous=OFF")
        with connection:
            marks = ", ".join("?" * len(COLUMNS.split(",")))
            connection.executemany(
                f"INSERT INTO paycore_invoices ({COLUMNS}) VALUES ({marks})", rows(size)
            )
        connection.execute("ANALYZE")
    finally:
        connection.close()


@contextmanager
def postgres_schema(url: str) -> Iterator[URL]:
    parsed = database_url(url)
    schema = f"paycore_search_{uuid.uuid4().hex[:12]}"
    admin = create_engine(parsed)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield parsed.update_query_dict({"options": f"-csearch_path={schema}"})
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@dataclass
class Store:
    name: str
    size: int
    gateway: Gateway
    storage: SqlStorage


def open_store(stack: ExitStack, backend: str, size: int, postgres_url: str) -> Store:
    _log(f"loading {size:,} invoices into {backend}")
    started = time.perf_counter()
    if backend == "postgresql":
        url = stack.enter_context(postgres_schema(postgres_url))
        storage = SqlStorage(url, pool_size=2)
        storage.migrate()
        load_postgres(url, size)
    else:
        folder = stack.enter_context(tempfile.TemporaryDirectory())
        path = str(Path(folder) / "search.sqlite3")
        storage = SqlStorage(f"sqlite:///{path}")
        storage.migrate()
        load_sqlite(path, size)
    stack.callback(storage.close)
    _log(f"  loaded in {time.perf_counter() - started:.0f} s")
    settings = Settings(database_url="memory://", auth_mode="soft")
    gateway = Gateway(settings, storage=storage, entry_points=False, clock=lambda: START + YEAR)
    return Store(backend, size, gateway, storage)


def figures(store: Store) -> dict[str, Callable[[], int]]:
    """Each timed call, returning how many rows it found (checked once before timing)."""
    gw, size = store.gateway, store.size
    guid = _guid(size // 2)
    order = size // 2 if (size // 2) % 10 != 9 else size // 2 + 1

    def floor() -> int:
        with store.storage.transaction() as tx:
            return 0 if tx.get_invoice(guid) is None else 1

    def page(**filters: Any) -> Callable[[], int]:
        where = invoice_filter(gw.settings, OWNER, **filters)

        def run() -> int:
            return len(gw.search.page(where, "first", 50).page.items)

        return run

    def stats() -> int:
        end = START + 200 * DAY
        answer = gw.search.stats(OWNER, start=end - 30 * DAY, end=end)
        return sum(int(d["invoices"]) for d in answer["days"])

    return {
        "floor_get_by_guid": floor,
        "order_id_in_data": page(text=f"ord-{order:07d}"),
        "word_in_description": page(text="kettle"),
        "rare_customer_id": page(text="cust4242"),
        "paid_last_week": page(
            statuses=["paid"], created_from=START + YEAR - 7 * DAY, created_to=START + YEAR
        ),
        "paid_week_in_march": page(
            statuses=["paid"], created_from=START + 60 * DAY, created_to=START + 67 * DAY
        ),
        "stats_30_days": stats,
    }


def _time(call: Callable[[], int], inner: int) -> float:
    samples = []
    for _ in range(inner):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--sqlite-size", type=int, default=None)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--inner", type=int, default=7)
    parser.add_argument("--postgres-url", default="postgresql://postgres@127.0.0.1:5432/test")
    parser.add_argument("--backends", default="postgresql,sqlite")
    args = parser.parse_args()
    with ExitStack() as stack:
        stores = []
        for backend in args.backends.split(","):
            size = args.size if backend == "postgresql" else (args.sqlite_size or args.size)
            stores.append(open_store(stack, backend, size, args.postgres_url))
        calls = {store.name: figures(store) for store in stores}
        names = list(calls[stores[0].name])
        for store in stores:  # warm up, and check each finds something
            for name in names:
                found = calls[store.name][name]()
                _log(f"  {store.name} {name}: {found} rows")
                assert found > 0, (store.name, name)
        results: dict[tuple[str, str], list[float]] = {}
        for rep in range(args.reps):
            _log(f"repetition {rep + 1} of {args.reps}")
            for name in names:
                for store in stores:
                    results.setdefault((store.name, name), []).append(
                        _time(calls[store.name][name], args.inner)
                    )
        for store in stores:
            floor = statistics.median(results[(store.name, "floor_get_by_guid")])
            for name in names:
                value = statistics.median(results[(store.name, name)])
                print(
                    json.dumps(
                        {
                            "bench": "search",
                            "backend": store.name,
                            "size": store.size,
                            "figure": name,
                            "ms": round(value, 3),
                            "floor_ms": round(floor, 3),
                            "ratio": round(value / floor, 1),
                            "python": platform.python_version(),
                        }
                    ),
                    flush=True,
                )


if __name__ == "__main__":
    main()
