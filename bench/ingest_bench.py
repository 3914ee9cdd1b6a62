"""Deposit ingest on a real database: the chain watcher against the ceiling of reading the
same transfers raw and bulk-writing the same rows, on a SQLite file and on PostgreSQL.

Setup (not timed): a fresh anvil gets N ERC20 transfers and N native-coin transfers to 2N
fresh addresses, signed here and mined into full blocks. Each measured run then starts on a
fresh database (a new SQLite file, a new PostgreSQL schema) holding one unpaid invoice per
address of its kind, so every run ingests the same N deposits from scratch.

For each database and each kind (``erc20``, ``native``), repeated ``--reps`` times with the
three sides interleaved (their order reversed from one repetition to the next):

- watcher: ``EvmWatcher.step`` from the first block of the kind's transfers until caught up
  -- the batched RPC, matching, valuing, attribution (invoice, payment, transaction row,
  outbox event, webhook check) and the cursor, all of it as in production;
- ceiling: what no watcher can beat on the same node and database -- the same reads by
  plain HTTP (``eth_getLogs`` for ERC20; the full blocks and the receipts for native coin),
  JSON decoding and the decoding of every transfer's fields, then the rows the watcher
  writes for each deposit, each kind in one bulk statement through the same driver
  (SQLAlchemy Core on sqlite3 / psycopg), all in one transaction: the
  ``paycore_transactions`` row, the invoice's new status, paid amount and payment (an
  ``UPDATE`` by guid) and one ``paycore_outbox`` event (a smaller payload than the
  watcher's, which only flatters the ceiling). The invoice each row names is handed to the
  ceiling for free (a dict built before the clock starts);
- tx_rows: the same, writing the ``paycore_transactions`` rows alone (the ceiling the first
  version of this bench used, printed for comparison: it leaves out two of the three rows a
  deposit costs, so its ratio reads lower than the watcher's real overhead).

Each line of stdout is one JSON object: per database and kind, the medians of the
repetitions -- ``figure`` (watcher deposits/s), ``ceiling`` (ceiling deposits/s),
``ratio`` (figure / ceiling, the target is >= 0.5) and the transaction-rows-only ceiling and
ratio -- with the samples; then one line for matching cost against 100 and 100,000 watched
addresses (in memory, no database: the watched set's size must not matter). Progress goes
to stderr.

    python bench/ingest_bench.py [--deposits N] [--reps R] [--postgres URL] [--no-postgres]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
from eth_account import Account
from sqlalchemy import Engine, bindparam, create_engine, func, select, text, update

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "chains" / "evm"))

from evm_chain import Deployment, connect, deploy_paycore, find_anvil, run_anvil  # noqa: E402

from paycore import NATIVE, ChainConfig, Gateway, Settings  # noqa: E402
from paycore.chains.evm import abi, plugin, scan  # noqa: E402
from paycore.chains.evm.backend import EvmBackend  # noqa: E402
from paycore.chains.evm.watcher import EvmWatcher  # noqa: E402
from paycore.domain.records import Invoice, Status  # noqa: E402
from paycore.domain.tokens import to_checksum  # noqa: E402
from paycore_storage import SqlStorage  # noqa: E402
from paycore_storage.engine import database_url, make_engine  # noqa: E402
from paycore_storage.tables import invoices as invoice_table  # noqa: E402
from paycore_storage.tables import outbox, transactions  # noqa: E402

CHAIN_ID = 31337
USD = 10**6  # the test token has 6 decimals
WEI_PAID = 10**15  # 0.001 ETH: 2 USD at the bench's ETH price
ETH_PRICE = "2000"
SEND_BATCH = 500
RPC_BATCH = 100
KINDS = ("erc20", "native")
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


def _log(text_: str) -> None:
    print(f"ingest_bench: {text_}", file=sys.stderr, flush=True)


class Rpc:
    """Plain JSON-RPC over one keep-alive HTTP connection: the ceiling's client."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=120)

    def call(self, method: str, params: list[Any]) -> Any:
        body = self.http.post(
            self.url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        ).json()
        if "error" in body:
            raise RuntimeError(f"{method}: {body['error']}")
        return body["result"]

    def batch(self, calls: list[tuple[str, list[Any]]]) -> list[Any]:
        results: list[Any] = []
        for start in range(0, len(calls), RPC_BATCH):
            chunk = calls[start : start + RPC_BATCH]
            payload = [
                {"jsonrpc": "2.0", "id": i, "method": m, "params": p}
                for i, (m, p) in enumerate(chunk)
            ]
            replies = sorted(self.http.post(self.url, json=payload).json(), key=lambda r: r["id"])
            results += [r["result"] for r in replies]
        return results


# -- setup: transfers on anvil ------------------------------------------------------------------


def _send_all(rpc: Rpc, signer: Any, txs: list[dict[str, Any]]) -> tuple[int, int]:
    """Sign and send ``txs`` with automine off, then mine until the pool is empty; returns
    the first and last block that hold them."""
    first = int(rpc.call("eth_blockNumber", []), 16) + 1
    rpc.call("evm_setAutomine", [False])
    try:
        for start in range(0, len(txs), SEND_BATCH):
            batch = [
                {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "eth_sendRawTransaction",
                    "params": ["0x" + signer.sign_transaction(tx).raw_transaction.hex()],
                }
                for i, tx in enumerate(txs[start : start + SEND_BATCH])
            ]
            errors = [r["error"] for r in rpc.http.post(rpc.url, json=batch).json() if "error" in r]
            if errors:
                raise RuntimeError(f"eth_sendRawTransaction: {errors[0]}")
        while int(rpc.call("txpool_status", [])["pending"], 16):
            rpc.call("evm_mine", [])
    finally:
        rpc.call("evm_setAutomine", [True])
    return first, int(rpc.call("eth_blockNumber", []), 16)


def _pay(evm: Deployment, rpc: Rpc, kind: str, addresses: list[str]) -> tuple[int, int]:
    payer = evm.payer
    if kind == "erc20":
        evm.mint(evm.token, payer.address, len(addresses) * USD)
    nonce = evm.chain.w3.eth.get_transaction_count(payer.address)
    gas_price = 2 * int(rpc.call("eth_gasPrice", []), 16)
    txs: list[dict[str, Any]] = []
    for i, to in enumerate(addresses):
        tx: dict[str, Any] = {"gasPrice": gas_price, "nonce": nonce + i, "chainId": CHAIN_ID}
        if kind == "erc20":
            call = abi.encode_call("transfer(address,uint256)", ["address", "uint256"], [to, USD])
            tx |= {"to": evm.token.address, "data": "0x" + call.hex(), "gas": 60_000}
        else:
            tx |= {"to": to, "value": WEI_PAID, "gas": 21_000}
        txs.append(tx)
    return _send_all(rpc, payer, txs)


# -- databases ----------------------------------------------------------------------------------


@contextmanager
def _fresh_database(kind: str, folder: Path, postgres: str | None) -> Iterator[str]:
    """The URL of a new, empty database: a SQLite file, or a PostgreSQL schema dropped after."""
    if kind == "sqlite":
        path = folder / f"{uuid.uuid4().hex[:12]}.sqlite3"
        try:
            yield f"sqlite:///{path}"
        finally:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        return
    assert postgres is not None
    parsed = database_url(postgres)
    schema = f"paycore_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(parsed)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        scoped = parsed.update_query_dict({"options": f"-csearch_path={schema}"})
        yield scoped.render_as_string(hide_password=False)
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def _postgres_url(wanted: str | None) -> str | None:
    """The PostgreSQL to use (``--postgres``, else the local trust-auth server)."""
    for url in (
        [wanted] if wanted else [DEFAULT_POSTGRES, DEFAULT_POSTGRES.replace("postgres@", "root@")]
    ):
        try:
            with create_engine(database_url(url)).connect() as connection:
                connection.execute(text("SELECT 1"))
            return url
        except Exception as exc:  # noqa: BLE001 - reported, then the next candidate
            _log(f"PostgreSQL at {url} unusable: {type(exc).__name__}")
    return None


# -- the scenario ---------------------------------------------------------------------------


class Scenario:
    """One kind of transfer: its addresses, blocks and the invoices that wait for them."""

    def __init__(self, evm: Deployment, kind: str, count: int, owner: str, created_at: int) -> None:
        self.kind = kind
        self.token = evm.token.address if kind == "erc20" else NATIVE
        self.accepted = f"{CHAIN_ID}:{self.token}"
        self.addresses = [to_checksum(Account.create().address) for _ in range(count)]
        self.owner = owner
        self.created_at = created_at
        self.first = self.last = 0
        #: What the ceiling is handed for free: recipient digits -> (address, guid).
        self.invoice_of: dict[str, tuple[str, str]] = {}

    def invoices(self) -> list[Invoice]:
        """The same guids on every run, so the ceiling's rows are the watcher's rows."""
        made = []
        for n, address in enumerate(self.addresses):
            guid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"paycore-bench:{self.kind}:{n}"))
            self.invoice_of[address[2:].lower()] = (address, guid)
            made.append(
                Invoice(
                    guid=guid,
                    created_at=self.created_at,
                    deadline=self.created_at + 86_400,
                    status=Status.INIT,
                    value=Decimal(1 if self.kind == "erc20" else 2),
                    token=self.accepted,
                    chain_id=CHAIN_ID,
                    description="bench",
                    address=address,
                    owner=self.owner,
                    accepted_tokens=(self.accepted,),
                )
            )
        return made


def _settings(evm: Deployment, url: str, scenario: Scenario, confirmations: int) -> Settings:
    config = ChainConfig(
        CHAIN_ID,
        "anvil",
        confirmations,
        evm.chain.rpc_url,
        factory=evm.factory.address,
        tokens=(evm.token.address,),
        start_block=scenario.first,
        scan_native=scenario.kind == "native",
    )
    return Settings(
        database_url=url,
        prices={f"{CHAIN_ID}:{evm.token.address}": "1", f"{CHAIN_ID}:{NATIVE}": ETH_PRICE},
        chains={CHAIN_ID: config},
    )


def _load_invoices(storage: SqlStorage, scenario: Scenario) -> None:
    with storage.transaction() as tx:
        for invoice in scenario.invoices():
            tx.insert_invoice(invoice)


def _run_watcher(evm: Deployment, url: str, scenario: Scenario, head: int) -> float:
    """Seconds the watcher takes from cold to caught up; checks every invoice got paid."""
    storage = SqlStorage(url)
    storage.migrate()
    _load_invoices(storage, scenario)
    settings = _settings(evm, url, scenario, head - scenario.last)
    gateway = Gateway(settings, storage=storage, entry_points=False, plugins=[plugin])
    backend = gateway.chains[CHAIN_ID]
    assert isinstance(backend, EvmBackend)
    watcher = EvmWatcher(gateway, backend.chain(CHAIN_ID))
    start = time.perf_counter()
    attributed = 0
    while True:
        report = watcher.step()
        attributed += report.deposits
        if report.error:
            raise RuntimeError(f"watcher: {report.error}")
        if report.caught_up:
            break
    elapsed = time.perf_counter() - start
    with storage.engine.connect() as connection:
        paid = connection.execute(
            select(func.count()).select_from(invoice_table).where(invoice_table.c.status == "paid")
        ).scalar_one()
        events = connection.execute(select(func.count()).select_from(outbox)).scalar_one()
    count = len(scenario.addresses)
    assert attributed == paid == events == count, (attributed, paid, events, count)
    gateway.close()
    return elapsed


def _decoded_erc20(rpc: Rpc, scenario: Scenario) -> list[tuple[str, int, str, str, int, int]]:
    """(tx_hash, log_index, from, to digits, units, block) of each transfer to an invoice."""
    logs = rpc.call(
        "eth_getLogs",
        [
            {
                "fromBlock": hex(scenario.first),
                "toBlock": hex(scenario.last),
                "address": [scenario.token],
                "topics": [abi.TRANSFER_TOPIC],
            }
        ],
    )
    return [
        (
            log["transactionHash"],
            int(log["logIndex"], 16),
            "0x" + log["topics"][1][-40:],
            log["topics"][2][-40:],
            int(log["data"], 16),
            int(log["blockNumber"], 16),
        )
        for log in logs
        if log["topics"][2][-40:] in scenario.invoice_of
    ]


def _decoded_native(rpc: Rpc, scenario: Scenario) -> tuple[list[Any], dict[int, int]]:
    blocks = rpc.batch(
        [("eth_getBlockByNumber", [hex(n), True]) for n in range(scenario.first, scenario.last + 1)]
    )
    found = [
        (
            tx["hash"],
            -1,
            tx["from"],
            tx["to"][2:].lower(),
            int(tx["value"], 16),
            int(block["number"], 16),
        )
        for block in blocks
        for tx in block["transactions"]
        if tx.get("to")
        and tx["to"][2:].lower() in scenario.invoice_of
        and tx["input"] in ("0x", "")
    ]
    receipts = rpc.batch([("eth_getTransactionReceipt", [row[0]]) for row in found])
    ok = [row for row, receipt in zip(found, receipts, strict=True) if receipt["status"] == "0x1"]
    return ok, {int(b["number"], 16): int(b["timestamp"], 16) for b in blocks}


def _run_ceiling(rpc: Rpc, url: str, scenario: Scenario, every_row: bool = True) -> float:
    """Seconds to read and decode the transfers raw and bulk-write their rows: with
    ``every_row``, every row the watcher writes for a deposit (its transaction row, its
    invoice's new status, paid amount and payment, and one outbox event), each kind in one
    bulk statement, all in one transaction; else the transaction rows alone."""
    storage = SqlStorage(url)
    storage.migrate()
    if every_row:
        _load_invoices(storage, scenario)  # the rows the updates change, as the watcher has
    storage.close()
    engine: Engine = make_engine(url)
    decimals = 6 if scenario.kind == "erc20" else 18
    price = Decimal(1) if scenario.kind == "erc20" else Decimal(ETH_PRICE)
    start = time.perf_counter()
    if scenario.kind == "erc20":
        found = _decoded_erc20(rpc, scenario)
        numbers = sorted({row[5] for row in found})
        headers = rpc.batch([("eth_getBlockByNumber", [hex(n), False]) for n in numbers])
        times = {n: int(h["timestamp"], 16) for n, h in zip(numbers, headers, strict=True)}
    else:
        found, times = _decoded_native(rpc, scenario)
    rows = []
    for tx_hash, log_index, sender, to_key, units, block in found:
        address, guid = scenario.invoice_of[to_key]
        amount = Decimal(units).scaleb(-decimals)
        rows.append(
            {
                "type": "deposit",
                "tx_hash": tx_hash,
                "log_index": log_index,
                "chain_id": CHAIN_ID,
                "token": scenario.token,
                "from_address": sender,
                "to_address": address,
                "amount": amount,
                "vs_value": amount * price,
                "timestamp": times[block],
                "owner": scenario.owner,
                "guid": guid,
                "counted": True,
                "block_number": block,
                "block_hash": "0x" + "00" * 32,
                "reorged": False,
            }
        )
    states, events = [], []
    if every_row:
        for row in rows:
            amount = format(row["amount"], "f")
            payment = {
                "tx_hash": row["tx_hash"], "log_index": row["log_index"],
                "chain_id": CHAIN_ID, "token": scenario.token, "from": row["from_address"],
                "amount": amount, "vs_value": format(row["vs_value"], "f"),
                "timestamp": row["timestamp"],
            }  # fmt: skip
            states.append({"g": row["guid"], "s": "paid", "p": row["amount"], "pm": [payment]})
            events.append(
                {
                    "owner": scenario.owner,
                    "guid": row["guid"],
                    "payload": {
                        "guid": row["guid"],
                        "status": "paid",
                        "paidAmount": amount,
                        "payments": [payment],
                    },  # fmt: skip
                    "created_at": row["timestamp"],
                    "type": None,
                }
            )
    with engine.begin() as connection:
        connection.execute(transactions.insert(), rows)
        if every_row:
            c = invoice_table.c
            connection.execute(
                update(invoice_table)
                .where(c.guid == bindparam("g"))
                .values(
                    status=bindparam("s"), paid_amount=bindparam("p"), payments=bindparam("pm")
                ),
                states,
            )
            connection.execute(outbox.insert(), events)
    elapsed = time.perf_counter() - start
    with engine.connect() as connection:
        stored = connection.execute(select(func.count()).select_from(transactions)).scalar_one()
    engine.dispose()
    assert len(rows) == stored == len(scenario.addresses), (len(rows), stored)
    return elapsed


# -- matching cost by watched-set size (in memory) ----------------------------------------------


def _matching(rpc: Rpc, scenario: Scenario) -> dict[str, Any]:
    """Per-block matching cost against 100 vs 100,000 watched addresses, same hits."""
    logs = rpc.call(
        "eth_getLogs",
        [
            {
                "fromBlock": hex(scenario.first),
                "toBlock": hex(scenario.last),
                "topics": [abi.TRANSFER_TOPIC],
            }
        ],
    )
    by_block: dict[str, list[Any]] = defaultdict(list)
    for log in logs:
        by_block[log["blockNumber"]].append(log)
    rng = random.Random(7)
    hits = scenario.addresses[:50]
    per_block: dict[int, float] = {}
    for size in (100, 100_000):
        filler = ["0x" + rng.randbytes(20).hex() for _ in range(size - len(hits))]
        watched = scan.watch_keys(hits + filler)
        samples = []
        for _ in range(3):
            start = time.perf_counter()
            for _round in range(20):
                for block_logs in by_block.values():
                    scan.match_transfers(block_logs, watched)
            samples.append((time.perf_counter() - start) / (20 * len(by_block)))
        per_block[size] = statistics.median(samples)
    return {
        "bench": "ingest_matching",
        "logs_per_block": len(logs) // max(len(by_block), 1),
        "figure_us_per_block_100k": round(per_block[100_000] * 1e6, 1),
        "ceiling_us_per_block_100": round(per_block[100] * 1e6, 1),
        "ratio": round(per_block[100_000] / per_block[100], 2),
    }


# -- the run --------------------------------------------------------------------------------------


def _measure(
    label: str, run: Callable[[str], float], url: str, samples: dict[str, list[float]], count: int
) -> None:
    seconds = run(url)
    samples[label].append(seconds)
    _log(f"  {label}: {seconds:.3f} s ({count / seconds:,.0f} deposits/s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--deposits", type=int, default=2000, help="transfers of each kind")
    parser.add_argument("--reps", type=int, default=3, help="repetitions (>= 3)")
    parser.add_argument(
        "--postgres", default=None, help=f"PostgreSQL URL (default {DEFAULT_POSTGRES})"
    )
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only (not a full run)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="erc20,native")
    args = parser.parse_args()
    count, reps = args.deposits, max(args.reps, 3)
    kinds = [k for k in args.kinds.split(",") if k]
    postgres = None if args.no_postgres else _postgres_url(args.postgres)
    if postgres is None and not args.no_postgres:
        raise SystemExit("no usable PostgreSQL: pass --postgres URL (or --no-postgres)")
    databases = ["sqlite"] + (["postgresql"] if postgres else [])
    anvil = find_anvil()
    if anvil is None:
        raise SystemExit("anvil is missing: run `npm ci`")

    with tempfile.TemporaryDirectory() as tmp, run_anvil(anvil, Path(tmp) / "anvil.log") as url:
        folder = Path(tmp)
        began = time.perf_counter()
        evm = deploy_paycore(connect(url))
        rpc = Rpc(url)
        created_at = int(time.time()) - 60
        scenarios = {k: Scenario(evm, k, count, evm.owner.address, created_at) for k in kinds}
        for kind, scenario in scenarios.items():
            _log(f"paying {count} {kind} transfers on anvil")
            scenario.first, scenario.last = _pay(evm, rpc, kind, scenario.addresses)
            scenario.invoices()  # fills invoice_of for the ceiling
            _log(f"  blocks {scenario.first}..{scenario.last}")
        head = int(rpc.call("eth_blockNumber", []), 16)

        samples: dict[tuple[str, str], dict[str, list[float]]] = {
            (db, k): defaultdict(list) for db in databases for k in kinds
        }
        for rep in range(reps):
            for db in databases:
                for kind, scenario in scenarios.items():
                    _log(f"rep {rep + 1}/{reps}: {db} {kind}")
                    sides: list[tuple[str, Callable[[str], float]]] = [
                        ("watcher", lambda u, s=scenario: _run_watcher(evm, u, s, head)),
                        ("ceiling", lambda u, s=scenario: _run_ceiling(rpc, u, s)),
                        ("tx_rows", lambda u, s=scenario: _run_ceiling(rpc, u, s, False)),
                    ]
                    if rep % 2:
                        sides.reverse()
                    for label, side in sides:
                        with _fresh_database(db, folder, postgres) as db_url:
                            _measure(label, side, db_url, samples[(db, kind)], count)

        for (db, kind), measured in samples.items():
            watcher_s = statistics.median(measured["watcher"])
            ceiling_s = statistics.median(measured["ceiling"])
            tx_rows_s = statistics.median(measured["tx_rows"])
            figure, ceiling = count / watcher_s, count / ceiling_s
            print(
                json.dumps(
                    {
                        "bench": "ingest",
                        "database": db,
                        "kind": kind,
                        "deposits": count,
                        "reps": reps,
                        "figure": round(figure),
                        "ceiling": round(ceiling),
                        "ratio": round(figure / ceiling, 3),
                        "target": ">= 0.5",
                        "unit": "deposits/s",
                        "ceiling_tx_rows_only": round(count / tx_rows_s),
                        "ratio_tx_rows_only": round(tx_rows_s / watcher_s, 3),
                        "watcher_s": [round(s, 3) for s in measured["watcher"]],
                        "ceiling_s": [round(s, 3) for s in measured["ceiling"]],
                    }
                ),
                flush=True,
            )
        if "erc20" in scenarios:
            print(json.dumps(_matching(rpc, scenarios["erc20"])), flush=True)
        print(
            json.dumps(
                {
                    "bench": "ingest_run",
                    "total_s": round(time.perf_counter() - began, 1),
                    "python": platform.python_version(),
                    "cpus": os.cpu_count(),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
