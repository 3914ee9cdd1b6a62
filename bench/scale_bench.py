"""Pages that cost one page: read latency at 10k and at 1M invoices, transactions and events
of one owner, on a SQLite file and on PostgreSQL, and how much it grows (the 1M/10k ratio;
the target is at most 1.5 for every paged read, the read by guid and the poll drain).

For each database and size the owner's rows are bulk-loaded straight into a freshly
migrated schema (PostgreSQL ``COPY``, SQLite ``executemany`` in one transaction -- not
through the API, which would take hours), with the per-owner counts the storage keeps, and
analysed. Each figure is then one request through ``paycore.api.handle`` -- routing,
handler, storage, JSON -- in soft auth mode, so no signature is in it (bench/auth_bench.py
measures that):

- ``invoices_first``: GET /invoices ``limit=50`` (the offset page clients use today);
- ``invoices_deep_cursor``: the page that starts at the middle of the list, by ``cursor``;
- ``invoices_last_cursor``: the last page, ``cursor=last``;
- ``invoice_by_guid``: GET /invoice/{guid} of the middle invoice;
- ``transactions_first``, ``transactions_deep_cursor``, ``transactions_last_cursor``: the
  same for GET /transactions (``limit=200``);
- ``poll_drain``: POST /poll/events (legacy token) with the queue's cursor put back to the
  start before each call: the whole table is its backlog, the answer its newest 1,000;
- ``invoices_deep_offset``, ``invoices_last_offset``, ``transactions_last_offset``: the
  middle and last pages by ``offset``, which still cost the rows they skip (read from an
  index alone); reported so that nobody takes the cursor figures for them.
- ``invoices_unpaged``: GET /invoices without paging at the smallest size (at most 10k by
  default is the ceiling), with the peak Python memory the streamed answer took.

Every request runs ``--inner`` times per repetition (5 for the offset pages and the drain),
alternating between the sizes call by call so that both meet the same load; the median of
those calls is the repetition's figure. ``--reps`` repetitions are interleaved -- each
figure on every database, then the next figure -- and the median repetition is reported.
The 10k figure is the ceiling of its 1M one: a page that does not grow with the table
costs the same at both. Output: one JSON object per line on stdout (each figure; then each
ratio as ``figure``/``value`` at the large size against ``ceiling``/``ceiling_value`` at
the small one, in milliseconds); progress on stderr.

    python bench/scale_bench.py [--sizes 10000,1000000] [--reps 3] [--inner 15]
                                [--postgres-url postgresql://postgres@127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL

from paycore import Gateway, Settings
from paycore.api import Request, handle
from paycore.domain.paging import Cursor
from paycore_storage import SqlStorage
from paycore_storage.engine import database_url
from paycore_storage.sql import INVOICES, TRANSACTIONS

CHAIN = 31337
TOKEN = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
PAYER = "0x" + "22" * 20
BASE_TIME = 1_700_000_000
#: Far ahead, so that no listed invoice is due and a read never turns into an expiry.
DEADLINE = 4_000_000_000
TARGET = 1.5
POLL_TOKEN = "scale-bench-token"


def _log(text_: str) -> None:
    print(f"scale_bench: {text_}", file=sys.stderr, flush=True)


def _emit(record: dict[str, Any]) -> None:
    print(json.dumps({"bench": "scale", **record}), flush=True)


@dataclass
class Dataset:
    backend: str
    size: int
    gateway: Gateway
    storage: SqlStorage
    middle_guid: str
    middle_tx: tuple[int, str, int, int, str]
    load_seconds: float


# -- rows -------------------------------------------------------------------------------------


def _guid(n: int) -> str:
    """Distinct for every n (an odd multiplier is a bijection mod 2**128), in no order."""
    return str(uuid.UUID(int=(n * 0x9E3779B97F4A7C15F39CC0605CEDC835) % (1 << 128)))


def _address(n: int) -> str:
    return "0x" + f"{n + 1:040x}"


def _tx_hash(n: int) -> str:
    return "0x" + f"{n:064x}"


def _invoice_wire(n: int) -> str:
    """The JSON an event carries: an invoice record as the interface shows it."""
    return json.dumps(
        {
            "guid": _guid(n),
            "createdAt": BASE_TIME + n // 50,
            "deadline": DEADLINE,
            "status": "partialPaid",
            "value": "100",
            "token": f"{CHAIN}:{TOKEN}",
            "chainId": CHAIN,
            "data": {"order": n},
            "description": "scale bench order",
            "address": _address(n),
            "owner": OWNER,
            "paidAmount": "1",
            "payments": [],
            "acceptedTokens": [f"{CHAIN}:{TOKEN}"],
            "paymentUrl": f"http://127.0.0.1:8000/paycore/checkout/?invoice={_guid(n)}",
        },
        separators=(",", ":"),
    )


def invoice_rows(size: int) -> Iterator[tuple[Any, ...]]:
    """Fifty invoices per second of created_at: same-second invoices are the normal case."""
    accepted = json.dumps([f"{CHAIN}:{TOKEN}"])
    for n in range(size):
        yield (
            n + 1,
            _guid(n),
            BASE_TIME + n // 50,
            DEADLINE,
            "init",
            "100",
            f"{CHAIN}:{TOKEN}",
            CHAIN,
            "scale bench order",
            _address(n),
            OWNER,
            accepted,
            json.dumps({"order": n}),
            "0",
            "[]",
            "usd",
        )


INVOICE_COLUMNS = (
    "seq, guid, created_at, deadline, status, value, token, chain_id, description, address,"
    " owner, accepted_tokens, data, paid_amount, payments, vs_currency"
)


def transaction_rows(size: int) -> Iterator[tuple[Any, ...]]:
    for n in range(size):
        yield (
            n + 1,
            CHAIN,
            _tx_hash(n),
            0,
            TOKEN,
            "deposit",
            PAYER,
            None,
            "1",
            "1",
            BASE_TIME + n // 10,
            OWNER,
            _guid(n),
            True,
            n + 1,
            _tx_hash(n + 10**9)[:66],
            False,
        )


TRANSACTION_COLUMNS = (
    "id, chain_id, tx_hash, log_index, token, type, from_address, to_address, amount,"
    " vs_value, timestamp, owner, guid, counted, block_number, block_hash, reorged"
)


def event_rows(size: int) -> Iterator[tuple[Any, ...]]:
    for n in range(size):
        yield (n + 1, OWNER, _guid(n), _invoice_wire(n), BASE_TIME + n // 50)


EVENT_COLUMNS = "id, owner, guid, payload, created_at"


def count_rows(size: int) -> list[tuple[Any, ...]]:
    return [(OWNER, INVOICES, CHAIN, 0, size), (OWNER, TRANSACTIONS, CHAIN, 0, size)]


# -- loading ----------------------------------------------------------------------------------


def load_postgres(url: URL, size: int) -> None:
    import psycopg

    conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo) as connection, connection.cursor() as cursor:
        for table, columns, rows in (
            ("paycore_invoices", INVOICE_COLUMNS, invoice_rows(size)),
            ("paycore_transactions", TRANSACTION_COLUMNS, transaction_rows(size)),
            ("paycore_outbox", EVENT_COLUMNS, event_rows(size)),
            ("paycore_owner_counts", "owner, kind, chain_id, stripe, n", iter(count_rows(size))),
        ):
            with cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        cursor.execute("SELECT setval('paycore_invoices_seq_seq', %s)", (size,))
        cursor.execute("SELECT setval('paycore_transactions_id_seq', %s)", (size,))
        cursor.execute("SELECT setval('paycore_outbox_id_seq', %s)", (size,))
        connection.commit()
        connection.autocommit = True
        cursor.execute(
            "VACUUM ANALYZE paycore_invoices, paycore_transactions, paycore_outbox,"
            " paycore_owner_counts"
        )


def load_sqlite(path: str, size: int) -> None:
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA synchronous=OFF")
        with connection:
            for table, columns, rows in (
                ("paycore_invoices", INVOICE_COLUMNS, invoice_rows(size)),
                ("paycore_transactions", TRANSACTION_COLUMNS, transaction_rows(size)),
                ("paycore_outbox", EVENT_COLUMNS, event_rows(size)),
                (
                    "paycore_owner_counts",
                    "owner, kind, chain_id, stripe, n",
                    iter(count_rows(size)),
                ),
            ):
                marks = ", ".join("?" * len(columns.split(",")))
                connection.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)
        connection.execute("ANALYZE")
    finally:
        connection.close()


@contextmanager
def postgres_schema(url: str) -> Iterator[URL]:
    parsed = database_url(url)
    schema = f"paycore_scale_{uuid.uuid4().hex[:12]}"
    admin = create_engine(parsed)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield parsed.update_query_dict({"options": f"-csearch_path={schema}"})
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def open_dataset(stack: ExitStack, backend: str, size: int, postgres_url: str) -> Dataset:
    _log(f"loading {size:,} invoices, transactions and events into {backend}")
    started = time.perf_counter()
    if backend == "postgresql":
        url = stack.enter_context(postgres_schema(postgres_url))
        storage = SqlStorage(url, pool_size=2)
        storage.migrate()
        load_postgres(url, size)
    else:
        folder = stack.enter_context(tempfile.TemporaryDirectory())
        path = str(Path(folder) / "scale.sqlite3")
        storage = SqlStorage(f"sqlite:///{path}")
        storage.migrate()
        load_sqlite(path, size)
    stack.callback(storage.close)
    load_seconds = time.perf_counter() - started
    _log(f"  loaded in {load_seconds:.0f} s")
    settings = Settings(
        database_url="memory://", auth_mode="soft", event_retention=1000, invoice_list_max=size
    )
    gateway = Gateway(settings, storage=storage, entry_points=False, clock=lambda: BASE_TIME)
    with storage.transaction() as tx:
        tx.put_poll_token(_poll_token())
        tx.open_queue(f"token:{POLL_TOKEN}", OWNER)
    middle = size // 2
    return Dataset(
        backend,
        size,
        gateway,
        storage,
        _guid(middle),
        (BASE_TIME + middle // 10, _tx_hash(middle), 0, CHAIN, TOKEN),
        load_seconds,
    )


def _poll_token() -> Any:
    from paycore.domain.records import PollToken

    return PollToken(POLL_TOKEN, OWNER, BASE_TIME)


# -- requests ---------------------------------------------------------------------------------


def _get(path: str, query: str) -> Request:
    return Request("GET", path, query)


def requests_for(data: Dataset) -> dict[str, Callable[[], Any]]:
    """The timed requests of one dataset, each checked to answer what it should."""
    size, gw = data.size, data.gateway
    half = size // 2
    deep_invoices = Cursor("invoices", "older", data.middle_guid, half).encode()
    deep_txs = Cursor("transactions", "older", data.middle_tx, half).encode()
    poll = Request(
        "POST",
        "/poll/events",
        body=json.dumps({"ownerAddress": OWNER, "token": POLL_TOKEN}).encode(),
    )
    owner = f"owner={OWNER}"

    def page(path: str, query: str, items: int) -> Callable[[], Any]:
        request = _get(path, query)

        def call() -> Any:
            answer = handle(gw, request)
            assert answer.status == 200, answer.body[:200]
            assert len(json.loads(answer.body)["items"]) == items
            return answer

        return call

    def by_guid() -> Any:
        answer = handle(gw, _get(f"/invoice/{data.middle_guid}", ""))
        assert answer.status == 200, answer.body[:200]
        return answer

    def drain() -> Any:
        with data.storage.engine.begin() as connection:  # untimed: see timed() below
            connection.execute(text("UPDATE paycore_event_queues SET last_seq = 0"))
        return poll

    return {
        "invoices_first": page("/invoices", f"{owner}&limit=50", 50),
        "invoices_deep_cursor": page("/invoices", f"{owner}&limit=50&cursor={deep_invoices}", 50),
        "invoices_last_cursor": page("/invoices", f"{owner}&limit=50&cursor=last", 50),
        "invoice_by_guid": by_guid,
        "transactions_first": page("/transactions", f"{owner}&limit=200", 200),
        "transactions_deep_cursor": page(
            "/transactions", f"{owner}&limit=200&cursor={deep_txs}", 200
        ),
        "transactions_last_cursor": page("/transactions", f"{owner}&limit=200&cursor=last", 200),
        "poll_drain": drain,
        "invoices_deep_offset": page("/invoices", f"{owner}&limit=50&offset={half}", 50),
        "invoices_last_offset": page("/invoices", f"{owner}&limit=50&offset={size - 50}", 50),
        "transactions_last_offset": page(
            "/transactions", f"{owner}&limit=200&offset={size - 200}", 200
        ),
    }


def timed_call(data: Dataset, name: str, call: Callable[[], Any]) -> float:
    """One request, in milliseconds."""
    if name == "poll_drain":
        request = call()  # puts the queue back to the start, untimed
        started = time.perf_counter()
        answer = handle(data.gateway, request)
        elapsed = time.perf_counter() - started
        assert answer.status == 200, answer.body[:200]
        assert len(json.loads(answer.body)["events"]) == 1000
        return elapsed * 1000
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def timed_pairs(
    datasets: list[Dataset], name: str, calls: list[Callable[[], Any]], inner: int
) -> list[float]:
    """The median of ``inner`` calls per dataset, the datasets' calls alternating (small,
    large, small, ...) so that both sizes meet the same load on a shared machine; one
    untimed round first."""
    samples: list[list[float]] = [[] for _ in datasets]
    for n in range(inner + 1):
        for i, (data, call) in enumerate(zip(datasets, calls, strict=True)):
            ms = timed_call(data, name, call)
            if n:
                samples[i].append(ms)
    return [statistics.median(s) for s in samples]


def unpaged(data: Dataset) -> dict[str, Any]:
    """GET /invoices without paging over every invoice: the time of one answer, then the
    peak Python memory of another (tracing allocations slows Python several times over)."""
    started = time.perf_counter()
    sent = handle_pieces(data)
    elapsed = time.perf_counter() - started
    tracemalloc.start()
    handle_pieces(data)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {"ms": round(elapsed * 1000, 1), "peak_mib": round(peak / 2**20, 2), "bytes": sent}


def handle_pieces(data: Dataset) -> int:
    """Send the streamed answer nowhere, piece by piece, as a server would."""
    from paycore.api import handle_streamed

    answer = handle_streamed(data.gateway, _get("/invoices", f"owner={OWNER}"))
    assert answer.status == 200 and answer.chunks is not None, answer.body[:200]
    return sum(len(piece) for piece in answer.chunks)


# -- the run ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,1000000")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--inner", type=int, default=15)
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get(
            "PAYCORE_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1/test"
        ),
    )
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    # The drain still counts what it drops (up to ten caps); only the log line is muted.
    logging.getLogger("paycore.events").setLevel(logging.ERROR)
    sizes = sorted(int(s) for s in args.sizes.split(","))
    backends = args.backends.split(",")
    if len(sizes) < 2 or sizes[0] < 1000 or args.reps < 3:
        parser.error("two sizes of at least 1000 and at least 3 repetitions")
    _emit(
        {
            "kind": "setup",
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "sizes": sizes,
            "reps": args.reps,
            "inner": args.inner,
            "sqlite": sqlite3.sqlite_version,
        }
    )
    with ExitStack() as stack:
        datasets = {
            (backend, size): open_dataset(stack, backend, size, args.postgres_url)
            for backend in backends
            for size in sizes
        }
        for data in datasets.values():
            _emit(
                {
                    "kind": "load",
                    "backend": data.backend,
                    "size": data.size,
                    "seconds": round(data.load_seconds, 1),
                }
            )
        calls = {key: requests_for(data) for key, data in datasets.items()}
        names = list(next(iter(calls.values())))
        results: dict[tuple[str, str, int], list[float]] = {}
        for rep in range(args.reps):
            _log(f"repetition {rep + 1} of {args.reps}")
            for name in names:
                inner = 5 if name.endswith("_offset") or name == "poll_drain" else args.inner
                for backend in backends:
                    group = [datasets[(backend, size)] for size in sizes]
                    group_calls = [calls[(backend, size)][name] for size in sizes]
                    for size, ms in zip(
                        sizes, timed_pairs(group, name, group_calls, inner), strict=True
                    ):
                        results.setdefault((name, backend, size), []).append(ms)
        for (name, backend, size), reps in results.items():
            _emit(
                {
                    "kind": "figure",
                    "figure": name,
                    "backend": backend,
                    "size": size,
                    "median_ms": round(statistics.median(reps), 3),
                    "reps_ms": [round(r, 3) for r in reps],
                }
            )
        for name in names:
            for backend in backends:
                small = statistics.median(results[(name, backend, sizes[0])])
                large = statistics.median(results[(name, backend, sizes[-1])])
                ratio = large / small
                targeted = not name.endswith("_offset")
                _emit(
                    {
                        "kind": "ratio",
                        "figure": f"{name}@{sizes[-1]}",
                        "value": round(large, 3),
                        "ceiling": f"{name}@{sizes[0]}",
                        "ceiling_value": round(small, 3),
                        "backend": backend,
                        "ratio": round(ratio, 2),
                        "target": TARGET if targeted else None,
                        "within_target": ratio <= TARGET if targeted else None,
                    }
                )
        for backend in backends:
            data = datasets[(backend, sizes[0])]
            _log(f"unpaged GET /invoices of {data.size:,} on {backend}")
            _emit(
                {
                    "kind": "figure",
                    "figure": "invoices_unpaged",
                    "backend": backend,
                    "size": data.size,
                    **unpaged(data),
                }
            )


if __name__ == "__main__":
    main()
