"""Deposit ingestion: the EVM watcher from cold, against raw ``eth_getLogs`` on the same range.

N invoices get derived deposit addresses; a payer pays each in the test token on a fresh
anvil (one mint, then N signed transfers sent in JSON-RPC batches and mined into full
blocks). Then, in the same run:

- raw: one ``eth_getLogs`` over the range by plain HTTP, JSON decoding and the decoding of
  every log's recipient, sender and amount -- the ceiling no watcher can beat;
- watcher: ``EvmWatcher`` from no cursor until caught up: the batched RPC, the matching,
  and one ``Gateway.record_deposit`` (one storage transaction: invoice, payment, transaction
  row, outbox event) per deposit;
- matching: the in-memory cost per block of matching its logs against 100 and against
  100,000 watched addresses (same hits in both), to show it does not grow with addresses.

Output: one JSON object on stdout; progress on stderr.

    python bench/ingest_bench.py [--deposits N] [--storage sqlite|memory]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from collections import defaultdict
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "evm"))

from evm_chain import Deployment, connect, deploy_paycore, find_anvil, run_anvil  # noqa: E402

from paycore import NATIVE, ChainConfig, Gateway, Settings  # noqa: E402
from paycore.chains.evm import abi, plugin, scan  # noqa: E402
from paycore.chains.evm.backend import EvmBackend  # noqa: E402
from paycore.chains.evm.watcher import EvmWatcher  # noqa: E402
from paycore.domain.records import Status  # noqa: E402
from paycore.storage import Storage  # noqa: E402

CHAIN_ID = 31337
USD = 10**6
SEND_BATCH = 500


def _log(text: str) -> None:
    print(f"ingest_bench: {text}", file=sys.stderr, flush=True)


def _rpc(url: str, method: str, params: list[Any]) -> Any:
    reply = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    body = reply.json()
    if "error" in body:
        raise RuntimeError(f"{method}: {body['error']}")
    return body["result"]


def _storage(kind: str, folder: Path) -> Storage:
    if kind == "memory":
        from paycore.storage.memory import MemoryStorage

        return MemoryStorage()
    from paycore_storage import SqlStorage

    return SqlStorage(f"sqlite:///{folder / 'ingest.sqlite3'}")


def _pay_all(evm: Deployment, addresses: list[str]) -> tuple[int, int]:
    """Mint once, then one signed transfer per address, mined into full blocks; returns the
    first and last block holding the transfers."""
    chain, token, payer = evm.chain, evm.token, evm.payer
    evm.mint(token, payer.address, len(addresses) * USD)
    url = chain.rpc_url
    first = int(_rpc(url, "eth_blockNumber", []), 16) + 1
    nonce = chain.w3.eth.get_transaction_count(payer.address)
    gas_price = 2 * int(_rpc(url, "eth_gasPrice", []), 16)
    _rpc(url, "evm_setAutomine", [False])
    try:
        for start in range(0, len(addresses), SEND_BATCH):
            batch = []
            for i, to in enumerate(addresses[start : start + SEND_BATCH], start=start):
                tx = {
                    "to": token.address,
                    "data": "0x"
                    + abi.encode_call(
                        "transfer(address,uint256)", ["address", "uint256"], [to, USD]
                    ).hex(),
                    "gas": 60_000,
                    "gasPrice": gas_price,
                    "nonce": nonce + i,
                    "chainId": CHAIN_ID,
                }
                raw = "0x" + payer.sign_transaction(tx).raw_transaction.hex()
                batch.append(
                    {"jsonrpc": "2.0", "id": i, "method": "eth_sendRawTransaction", "params": [raw]}
                )
            replies = httpx.post(url, json=batch, timeout=60).json()
            errors = [r["error"] for r in replies if "error" in r]
            if errors:
                raise RuntimeError(f"eth_sendRawTransaction: {errors[0]}")
        while int(_rpc(url, "txpool_status", [])["pending"], 16):
            _rpc(url, "evm_mine", [])
    finally:
        _rpc(url, "evm_setAutomine", [True])
    return first, int(_rpc(url, "eth_blockNumber", []), 16)


def _raw_getlogs(url: str, token: str, first: int, last: int) -> tuple[float, list[Any]]:
    """The ceiling: one eth_getLogs, JSON decoding and every log's fields decoded."""
    start = time.perf_counter()
    payload = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "eth_getLogs",
        "params": [
            {
                "fromBlock": hex(first),
                "toBlock": hex(last),
                "address": [token],
                "topics": [abi.TRANSFER_TOPIC],
            }
        ],
    }
    logs = httpx.post(url, json=payload, timeout=120).json()["result"]
    decoded = [
        (
            log["topics"][2][-40:],
            log["topics"][1][-40:],
            int(log["data"], 16),
            log["transactionHash"],
            int(log["logIndex"], 16),
            int(log["blockNumber"], 16),
        )
        for log in logs
    ]
    elapsed = time.perf_counter() - start
    assert len(decoded) == len(logs)
    return elapsed, logs


def _matching(logs: list[Any], real: list[str]) -> dict[str, Any]:
    """Per-block matching cost against 100 vs 100,000 watched addresses, same hits."""
    by_block: dict[str, list[Any]] = defaultdict(list)
    for log in logs:
        by_block[log["blockNumber"]].append(log)
    rng = random.Random(7)
    hits = real[:50]

    def filler(count: int) -> list[str]:
        return ["0x" + rng.randbytes(20).hex() for _ in range(count)]

    result: dict[str, Any] = {"blocks": len(by_block), "logs_per_block": len(logs) // len(by_block)}
    per_block: dict[int, float] = {}
    for size in (100, 100_000):
        build_start = time.perf_counter()
        watched = scan.watch_keys(hits + filler(size - len(hits)))
        build = time.perf_counter() - build_start
        rounds = 50
        start = time.perf_counter()
        matched = 0
        for _ in range(rounds):
            for block_logs in by_block.values():
                matched += len(scan.match_transfers(block_logs, watched))
        elapsed = time.perf_counter() - start
        per_block[size] = elapsed / (rounds * len(by_block))
        result[f"watched_{size}"] = {
            "us_per_block": round(per_block[size] * 1e6, 1),
            "ns_per_log": round(elapsed / (rounds * len(logs)) * 1e9, 1),
            "matches_per_round": matched // rounds,
            "build_watched_set_ms": round(build * 1e3, 1),
        }
    result["ratio_100k_vs_100"] = round(per_block[100_000] / per_block[100], 2)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deposits", type=int, default=5000, help="invoices paid (>= 5000)")
    parser.add_argument("--storage", choices=["sqlite", "memory"], default="sqlite")
    args = parser.parse_args()
    count = args.deposits
    anvil = find_anvil()
    if anvil is None:
        raise SystemExit("anvil is missing: run `npm ci`")

    with tempfile.TemporaryDirectory() as folder, run_anvil(anvil, Path(folder) / "a.log") as url:
        began = time.perf_counter()
        chain = connect(url)
        evm = deploy_paycore(chain)
        config = ChainConfig(
            CHAIN_ID,
            "anvil",
            0,
            url,
            factory=evm.factory.address,
            tokens=(evm.token.address,),
            start_block=chain.w3.eth.block_number + 1,
            block_batch=1000,
            scan_native=False,
        )
        settings = Settings(
            database_url="memory://",
            prices={f"{CHAIN_ID}:{evm.token.address}": "1", f"{CHAIN_ID}:{NATIVE}": "2000"},
            chains={CHAIN_ID: config},
        )
        storage = _storage(args.storage, Path(folder))
        gateway = Gateway(settings, storage=storage, entry_points=False, plugins=[plugin])
        owner = evm.owner.address
        accepted = [f"{CHAIN_ID}:{evm.token.address}"]

        _log(f"creating {count} invoices ({args.storage})")
        start = time.perf_counter()
        invoices = [
            gateway.create_invoice(
                owner,
                {"value": "1", "chainId": CHAIN_ID, "description": "b", "acceptedTokens": accepted},
            )
            for _ in range(count)
        ]
        create_s = time.perf_counter() - start

        _log(f"paying {count} invoices on anvil")
        start = time.perf_counter()
        first, last = _pay_all(evm, [i.address for i in invoices])
        pay_s = time.perf_counter() - start
        _log(f"transfers in blocks {first}..{last}")

        _log("raw eth_getLogs + decode")
        raw_s, logs = _raw_getlogs(url, evm.token.address, first, last)
        transfers = [log for log in logs if log["topics"][1][-40:] != "0" * 40]  # not the mint
        assert len(transfers) == count, (len(transfers), count)

        _log("watcher from cold")
        backend = gateway.chains[CHAIN_ID]
        assert isinstance(backend, EvmBackend)
        recording = 0.0

        def timed_record(deposit: Any) -> Any:
            nonlocal recording
            begun = time.perf_counter()
            try:
                return gateway.record_deposit(deposit)
            finally:
                recording += time.perf_counter() - begun

        watcher = EvmWatcher(gateway, backend.chain(CHAIN_ID), record=timed_record)
        start = time.perf_counter()
        passes = 0
        attributed = 0
        while True:
            report = watcher.step()
            passes += 1
            attributed += report.deposits
            if report.caught_up:
                break
        watch_s = time.perf_counter() - start
        with gateway.storage.transaction() as tx:
            paid = sum(
                1
                for invoice in invoices
                if (stored := tx.get_invoice(invoice.guid)) and stored.status is Status.PAID
            )
        assert attributed == count and paid == count, (attributed, paid, count)

        _log("matching cost by watched-set size")
        matching = _matching(transfers, [i.address for i in invoices])
        gateway.close()
        result = {
            "bench": "ingest",
            "deposits": count,
            "storage": args.storage,
            "blocks": last - first + 1,
            "setup_s": {
                "invoices": round(create_s, 2),
                "pay_and_mine": round(pay_s, 2),
            },
            "raw_getlogs": {
                "seconds": round(raw_s, 3),
                "logs_per_sec": round(len(logs) / raw_s),
            },
            "watcher": {
                "seconds": round(watch_s, 2),
                "passes": passes,
                "deposits_per_sec": round(count / watch_s),
                # Gateway.record_deposit: one storage transaction per deposit.
                "attribution_s": round(recording, 2),
                # Everything else: batched RPC, consistency checks, matching, decoding.
                "scan_s": round(watch_s - recording, 3),
                "scan_deposits_per_sec": round(count / (watch_s - recording)),
            },
            "watcher_vs_raw": round((count / watch_s) / (len(logs) / raw_s), 4),
            "matching": matching,
            "total_s": round(time.perf_counter() - began, 1),
            "python": platform.python_version(),
            "web3": version("web3"),
            "cpus": os.cpu_count(),
        }
        print(json.dumps(result))


if __name__ == "__main__":
    main()
