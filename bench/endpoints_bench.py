"""What webhook endpoints cost a committed change: ``record_deposit`` for an owner with the
``/webhook/set`` URL and five endpoints (each sent every type: six delivery rows a change),
against the floor of the same change for an owner with no webhook at all (no delivery row).

Each change is one full payment of a fresh invoice (one status change, one event). Both
cases run on the same store, interleaved, each repetition paying ``--changes`` invoices per
case; the figure is the median over ``--reps`` (at least 3) of changes per second, and
``ratio`` = endpoints / floor. On a temporary SQLite file and, with ``--postgres URL``, on
PostgreSQL (a schema of its own, dropped afterwards). Output: one JSON line per database.

    python bench/endpoints_bench.py [--changes N] [--reps R] [--postgres URL]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from events_bench import bench_database  # noqa: E402 - the bench folder is not a package

from paycore import NATIVE, Deposit, Gateway, Settings  # noqa: E402
from paycore.domain.changes import ALL_TYPES  # noqa: E402
from paycore.webhooks.config import set_webhook  # noqa: E402

CHAIN = 31337
ETH = f"{CHAIN}:{NATIVE}"
HOOKED = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
BARE = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
PAYER = "0x" + "22" * 20


def changes_per_second(gateway: Gateway, owner: str, count: int) -> float:
    invoices = [
        gateway.create_invoice(
            owner,
            {
                "description": "bench",
                "value": "10",
                "chainId": CHAIN,
                "acceptedTokens": [ETH],
                "address": "0x" + os.urandom(20).hex(),
            },
        )
        for _ in range(count)
    ]
    started = time.perf_counter()
    for invoice in invoices:
        deposit = Deposit(
            CHAIN, "0x" + os.urandom(32).hex(), -1, NATIVE, PAYER, invoice.address,
            Decimal("0.005"), gateway.now(),
        )  # fmt: skip
        [changed] = gateway.record_deposit(deposit)
        assert changed.status.value == "paid"
    return count / (time.perf_counter() - started)


def run(url: str | None, changes: int, reps: int) -> dict[str, object]:
    with bench_database(url) as (database_url, backend):
        settings = Settings(
            database_url=database_url, prices={ETH: "2000"}, webhook_allow_private=True
        )
        gateway = Gateway(settings)
        try:
            gateway.storage.migrate()  # type: ignore[attr-defined]
            set_webhook(gateway.storage, HOOKED, "http://127.0.0.1:9/set", allow_private=True)
            for n in range(5):
                gateway.webhooks.endpoints.create(HOOKED, f"http://127.0.0.1:9/ep{n}", ALL_TYPES)
            hooked: list[float] = []
            floor: list[float] = []
            for rep in range(reps):  # interleaved, the order alternating
                cases = [(hooked, HOOKED), (floor, BARE)]
                for samples, owner in cases if rep % 2 == 0 else cases[::-1]:
                    samples.append(changes_per_second(gateway, owner, changes))
                print(f"endpoints_bench: {backend} rep {rep + 1}/{reps}", file=sys.stderr)
            rows, _total, _off, _lim = gateway.webhooks.deliveries(HOOKED, limit=1)
            assert rows and rows[0].endpoint_id is not None  # the endpoints were written to
        finally:
            gateway.close()
    figure, ceiling = statistics.median(hooked), statistics.median(floor)
    return {
        "bench": "endpoints",
        "database": backend,
        "what": "record_deposit changes/s with the /webhook/set URL and 5 endpoints",
        "figure": round(figure, 1),
        "ceiling_what": "the same changes for an owner with no webhook (no delivery row)",
        "ceiling": round(ceiling, 1),
        "ratio": round(figure / ceiling, 3),
        "changes": changes,
        "reps": reps,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--changes", type=int, default=300, help="changes per case and rep")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (>= 3)")
    parser.add_argument("--postgres", default=None, help="a PostgreSQL URL to run on too")
    args = parser.parse_args()
    if args.reps < 3:
        parser.error("--reps must be at least 3 (the figure is a median)")
    for url in [None, *([args.postgres] if args.postgres else [])]:
        print(json.dumps(run(url, args.changes, args.reps)), flush=True)


if __name__ == "__main__":
    main()
