"""Batch payouts on anvil: gas per recipient of one ``PaycoreBatchPay.pay`` call against
the floor of paying each recipient with a transaction of its own, and the time paycore takes
to check, build and store a batch on a SQLite file and on PostgreSQL.

For each database, each kind (``native``, ``erc20``) and each batch size N, repeated
``--reps`` times with the two sides interleaved (their order reversed each repetition), to
N fresh recipients each time:

- batch: ``Gateway.payouts.check`` and ``create`` (timed: rows checked, balances and
  allowance read, calls split and built, the batch stored), then the owner signs and sends
  the approval (erc20, not counted) and the ``pay`` call(s); gas is the sum of their
  ``gasUsed`` over N;
- floor: N plain transactions, one per recipient (a value transfer; an ERC20 ``transfer``),
  gas summed over N -- what paying one at a time costs.

Each line of stdout is one JSON object: the medians of the repetitions -- ``figure`` (batch
gas per recipient), ``floor`` (one-at-a-time gas per recipient), ``ratio`` (figure / floor:
below 1 the batch is cheaper), ``build_ms`` (check + create) -- with the samples. Progress
goes to stderr.

    python bench/payout_gas.py [--sizes 10,100] [--reps 3] [--postgres URL] [--no-postgres]
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
from typing import Any

from eth_account import Account
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "chains" / "evm"))

from evm_chain import Deployment, connect, deploy_paycore, find_anvil, run_anvil  # noqa: E402

from paycore import ChainConfig, Gateway, Settings  # noqa: E402
from paycore.chains.evm import plugin  # noqa: E402
from paycore_storage import SqlStorage  # noqa: E402

CHAIN_ID = 31337
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


def _log(*parts: object) -> None:
    print(*parts, file=sys.stderr, flush=True)


@contextmanager
def _database(kind: str, folder: Path, postgres: str | None) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{folder / (uuid.uuid4().hex[:12] + '.sqlite3')}"
        return
    assert postgres is not None
    url = make_url(postgres.replace("postgresql://", "postgresql+psycopg://", 1))
    schema = f"paycore_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(url)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        scoped = url.update_query_dict({"options": f"-csearch_path={schema}"})
        yield scoped.render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def _send(evm: Deployment, unsigned: dict[str, Any]) -> Any:
    fields = ("to", "data", "gas", "gasPrice", "nonce", "value", "chainId")
    signed = evm.owner.sign_transaction({k: unsigned[k] for k in fields})
    tx_hash = evm.chain.w3.eth.send_raw_transaction(signed.raw_transaction)
    receipt = evm.chain.w3.eth.wait_for_transaction_receipt(tx_hash, timeout=60)
    assert receipt["status"] == 1
    return receipt


def _batch(evm: Deployment, gateway: Gateway, kind: str, n: int) -> tuple[float, float]:
    """(gas per recipient, milliseconds to check and create)."""
    token = "ETH" if kind == "native" else evm.token.address
    rows = [
        {"address": Account.create().address, "token": token, "amount": "0.000001"}
        for _ in range(n)
    ]
    start = time.perf_counter()
    checked = gateway.payouts.check(CHAIN_ID, list(enumerate(rows, start=1)))
    created = gateway.payouts.create(evm.owner.address, CHAIN_ID, checked)
    build_ms = (time.perf_counter() - start) * 1000
    for approval in created.built.approvals:
        _send(evm, approval)
    gas = sum(_send(evm, c.transaction)["gasUsed"] for c in created.built.calls)
    return gas / n, build_ms


def _floor(evm: Deployment, kind: str, n: int) -> float:
    gas = 0
    for _ in range(n):
        to = Account.create().address
        if kind == "native":
            receipt = evm.chain.send_value(evm.owner, to, 10**12)
        else:
            receipt = evm.chain.transact(evm.owner, evm.token.functions.transfer(to, 1))
        gas += receipt["gasUsed"]
    return gas / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    databases = ["sqlite"] + ([] if args.no_postgres else ["postgres"])
    anvil = find_anvil()
    if anvil is None:
        sys.exit("anvil is missing: run `npm ci`")
    with tempfile.TemporaryDirectory() as tmp, run_anvil(anvil, Path(tmp) / "anvil.log") as url:
        evm = deploy_paycore(connect(url))
        batch_pay = evm.chain.deploy(evm.admin, "PaycoreBatchPay").address
        evm.mint(evm.token, evm.owner.address, 10**15)
        for db in databases:
            with _database(db, Path(tmp), args.postgres) as db_url:
                storage = SqlStorage(db_url)
                storage.migrate()
                config = ChainConfig(
                    chain_id=CHAIN_ID, name="anvil", rpc_url=url, factory=evm.factory.address,
                    tokens=(evm.token.address,), batch_pay=batch_pay,
                )  # fmt: skip
                settings = Settings(database_url=db_url, chains={CHAIN_ID: config})
                gateway = Gateway(settings, storage=storage, entry_points=False, plugins=[plugin])
                for kind in ("native", "erc20"):
                    for n in sizes:
                        figures: list[float] = []
                        floors: list[float] = []
                        builds: list[float] = []
                        for rep in range(args.reps):
                            _log(f"{db} {kind} n={n} rep {rep + 1}/{args.reps}")
                            if rep % 2:
                                floors.append(_floor(evm, kind, n))
                            per, ms = _batch(evm, gateway, kind, n)
                            figures.append(per)
                            builds.append(ms)
                            if not rep % 2:
                                floors.append(_floor(evm, kind, n))
                        figure, floor = statistics.median(figures), statistics.median(floors)
                        line = {
                            "bench": "payout_gas",
                            "database": db,
                            "kind": kind,
                            "recipients": n,
                            "figure": round(figure),
                            "floor": round(floor),
                            "ratio": round(figure / floor, 3),
                            "build_ms": round(statistics.median(builds), 1),
                            "samples": {"figure": figures, "floor": floors, "build_ms": builds},
                        }
                        print(json.dumps(line), flush=True)
                gateway.close()
                storage.close()


if __name__ == "__main__":
    main()
