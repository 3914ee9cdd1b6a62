"""Host signals: how many handler calls per second one consumer makes through a backlog,
under its lease (``SignalConsumer``: a lease per pass, the position moved in storage after
each handled event), against two ceilings measured in the same run on the same events:

- ``ceiling``: the same reads and handler calls, each followed by a bare compare-and-set of
  the position committed on its own (``move_queue``): the least any consumer can do that
  keeps its progress durable per event, with no lease; ``ratio`` = leased / ceiling.
- ``ceiling_batch``: one unguarded move per batch of 200 (the design before the lease,
  which let two consumers call a handler twice and a crash repeat up to 200 calls);
  ``ratio_batch`` = leased / ceiling_batch.

Interleaved: each rep resets the queue's position and runs the ceilings and the leased
consumer one after the other, on a SQLite file and on PostgreSQL (``--postgres URL``, a
temporary schema). Prints one JSON line per database: medians of ``--reps`` (at least 3),
in calls per second.

    python bench/signals_bench.py [--events N] [--reps R] [--postgres URL]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from paycore.domain.records import ALL_OWNERS, NewEvent, OutboxEvent
from paycore.events.signals import BATCH, SignalConsumer, Signals
from paycore_storage import SqlStorage

OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
NAME = "bench.count"
QUEUE = f"signal:{NAME}"


@contextmanager
def databases(postgres: str | None) -> Iterator[list[tuple[str, str]]]:
    """(name, URL) of a temporary SQLite file and, given ``postgres``, a temporary schema."""
    found: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as folder:
        found.append(("sqlite", f"sqlite:///{Path(folder) / 'signals.sqlite3'}"))
        if postgres is None:
            yield found
            return
        from sqlalchemy import create_engine, text

        from paycore_storage.engine import database_url

        parsed = database_url(postgres)
        schema = f"paycore_bench_{uuid.uuid4().hex[:12]}"
        admin = create_engine(parsed)
        with admin.begin() as connection:
            connection.execute(text(f'CREATE SCHEMA "{schema}"'))
        try:
            scoped = parsed.update_query_dict({"options": f"-csearch_path={schema}"})
            found.append(("postgresql", scoped.render_as_string(hide_password=False)))
            yield found
        finally:
            with admin.begin() as connection:
                connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
            admin.dispose()


def prepared(url: str, events: int) -> tuple[SqlStorage, int]:
    """A store whose handler queue opened before ``events`` events; returns it and the
    queue's starting position."""
    store = SqlStorage(url)
    store.migrate()
    with store.transaction() as tx:
        tx.open_queue(QUEUE, ALL_OWNERS)
        read = tx.read_outbox(QUEUE, 1)
    assert read is not None
    batch = [NewEvent(OWNER, f"guid-{n}", {"n": n}, n, "invoice.paid") for n in range(events)]
    for at in range(0, events, 500):
        with store.transaction() as tx:
            tx.add_events(batch[at : at + 500])
    return store, read.position


def rewind(store: SqlStorage, start: int) -> None:
    with store.transaction() as tx:
        read = tx.read_outbox(QUEUE, 1)
        assert read is not None
        assert tx.move_queue(QUEUE, read.position, start)


def ceiling(store: SqlStorage, events: int, *, per_event: bool) -> float:
    """Calls per second with the same reads and no lease: a committed move after each
    event (``per_event``), or one per batch."""
    calls = 0
    began = time.perf_counter()
    while calls < events:
        with store.transaction() as tx:
            read = tx.read_outbox(QUEUE, BATCH)
        assert read is not None and read.events
        position = read.position
        for event in read.events:
            handle(event)
            calls += 1
            if per_event:
                with store.transaction() as tx:
                    assert tx.move_queue(QUEUE, position, event.id)
                position = event.id
        with store.transaction() as tx:
            assert tx.move_queue(QUEUE, position, read.upto)
    return events / (time.perf_counter() - began)


def leased(store: SqlStorage, events: int) -> float:
    """Calls per second of ``SignalConsumer.run_once`` until the backlog is done."""
    seen: list[int] = []
    signals = Signals()
    signals.subscribe(lambda e: seen.append(e.id), name=NAME)
    consumer = SignalConsumer(store, [signals])
    began = time.perf_counter()
    for _ in range(events):  # bounded: each pass handles at least one event
        if len(seen) >= events or not consumer.run_once():
            break
    elapsed = time.perf_counter() - began
    assert len(seen) == events == len(set(seen)), (len(seen), events)
    return events / elapsed


def handle(event: OutboxEvent) -> None:
    assert event.id > 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--postgres", default=None)
    args = parser.parse_args(argv)
    reps = max(3, args.reps)
    with databases(args.postgres) as found:
        for name, url in found:
            store, start = prepared(url, args.events)
            ceilings: list[float] = []
            batches: list[float] = []
            figures: list[float] = []
            for rep in range(reps):
                rewind(store, start)
                ceilings.append(ceiling(store, args.events, per_event=True))
                rewind(store, start)
                figures.append(leased(store, args.events))
                rewind(store, start)
                batches.append(ceiling(store, args.events, per_event=False))
                print(f"{name} rep {rep + 1}/{reps}", file=sys.stderr)
            store.close()
            figure, top = statistics.median(figures), statistics.median(ceilings)
            batch = statistics.median(batches)
            line = {
                "bench": "signals",
                "database": name,
                "events": args.events,
                "reps": reps,
                "figure": round(figure, 1),
                "unit": "handler calls/s, leased, position moved per event",
                "ceiling": round(top, 1),
                "ceiling_what": "same reads and calls, a bare committed move per event",
                "ratio": round(figure / top, 3),
                "ceiling_batch": round(batch, 1),
                "ratio_batch": round(figure / batch, 3),
            }
            print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
