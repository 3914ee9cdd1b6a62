"""Native coin sent by a contract (internal transfers), found in the node's call traces.

``tests/chains/evm/contracts/Payout.sol``, compiled here with the npm ``solc``, pays deposit
addresses from inside its own calls, as an exchange's hot wallet or a batch payout does.
The block scan cannot see that: only ``internal_transfers`` (``debug``: the callTracer,
``trace``: ``trace_block``, both served by anvil) can, and then a transfer inside a call
that reverted, or inside a failed transaction, must not count.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from evm_chain import REVERT_GAS, Deployment
from evm_gateway import CHAIN_ID, ETH_ID, drain, make_gateway, watcher
from rpc_proxy import FaultProxy, Faults
from web3.contract import Contract

from paycore import Gateway

pytestmark = pytest.mark.node  # anvil and solc come from npm

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
ETH = 10**18

_COMPILE = """
const solc = require("solc");
const fs = require("fs");
const source = fs.readFileSync(process.argv[1], "utf8");
const input = {language: "Solidity", sources: {"Payout.sol": {content: source}},
  settings: {evmVersion: "paris", outputSelection: {"*": {"*": ["abi", "evm.bytecode.object"]}}}};
const out = JSON.parse(solc.compile(JSON.stringify(input)));
const bad = (out.errors || []).filter((e) => e.severity === "error");
if (bad.length) { console.error(bad.map((e) => e.formattedMessage).join("\\n")); process.exit(1); }
const found = out.contracts["Payout.sol"]["Payout"];
console.log(JSON.stringify({abi: found.abi, bytecode: found.evm.bytecode.object}));
"""


@pytest.fixture(scope="session")
def payout_artifact() -> dict[str, Any]:
    done = subprocess.run(
        ["node", "-e", _COMPILE, str(HERE / "contracts" / "Payout.sol")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    artifact: dict[str, Any] = json.loads(done.stdout)
    return artifact


@pytest.fixture
def payout(evm: Deployment, payout_artifact: dict[str, Any]) -> Contract:
    w3 = evm.chain.w3
    factory = w3.eth.contract(abi=payout_artifact["abi"], bytecode=payout_artifact["bytecode"])
    tx = factory.constructor().build_transaction({"from": evm.payer.address})
    receipt = evm.chain.send_tx(evm.payer, tx)
    address = receipt["contractAddress"]
    assert address is not None
    return w3.eth.contract(address=address, abi=payout_artifact["abi"])


def eth_invoices(gateway: Gateway, evm: Deployment, count: int) -> list[Any]:
    body = {"value": "100", "chainId": CHAIN_ID, "acceptedTokens": [ETH_ID]}
    return [
        gateway.create_invoice(evm.owner.address, {**body, "description": f"payout {n}"})
        for n in range(count)
    ]


def paid(gateway: Gateway, bills: list[Any]) -> list[tuple[Decimal, list[int]]]:
    with gateway.storage.transaction() as tx:
        found = [tx.get_invoice(b.guid) for b in bills]
    return [(i.paid_amount, [p.log_index for p in i.payments]) for i in found if i is not None]


def pay_from_contract(evm: Deployment, payout: Contract, bills: list[Any]) -> None:
    """One transaction paying the first two invoices 0.01 and 0.02 ETH from the contract,
    one paying the third inside a call that reverts, one that fails as a whole (it sends
    less than it pays on) trying to pay the fourth."""
    a, b, c, d = (bill.address for bill in bills)
    evm.chain.transact(
        evm.payer, payout.functions.pay([a, b], [ETH // 100, ETH // 50]), value=3 * ETH // 100
    )
    evm.chain.transact(evm.payer, payout.functions.payThenUndo(c, ETH // 100), value=ETH // 100)
    failing = payout.functions.pay([d], [ETH // 10]).build_transaction(
        {"from": evm.payer.address, "value": ETH // 100, "gas": REVERT_GAS}
    )
    failing.pop("nonce", None)
    receipt = evm.chain.send_tx(evm.payer, failing)
    assert receipt["status"] == 0


@pytest.mark.parametrize("mode", ["debug", "trace"])
def test_coin_sent_by_a_contract_counts_where_the_node_traces(
    evm: Deployment, payout: Contract, mode: str
) -> None:
    gateway = make_gateway(evm, internal_transfers=mode)
    bills = eth_invoices(gateway, evm, 4)
    w = watcher(gateway)
    pay_from_contract(evm, payout, bills)
    assert sum(r.deposits for r in drain(w)) == 2
    # 0.01 and 0.02 ETH at 2000 USD; log indexes -2 and -3: the first and second
    # value-moving calls inside the transaction.
    assert paid(gateway, bills) == [
        (Decimal(20), [-2]),
        (Decimal(40), [-3]),
        (Decimal(0), []),
        (Decimal(0), []),
    ]
    # Read again from the start (a cursor moved back): nothing counts twice.
    w.release()
    again = watcher(gateway, holder="again")
    assert again._claim() is not None  # noqa: SLF001
    start = gateway.settings.chains[CHAIN_ID].start_block
    assert start is not None and again._advance(start - 1, None)  # noqa: SLF001
    reports = drain(again)
    assert reports[0].scanned_from == start  # the same transfers met again, and known
    assert paid(gateway, bills)[:2] == [(Decimal(20), [-2]), (Decimal(40), [-3])]


def test_without_traces_coin_sent_by_a_contract_is_not_seen(
    evm: Deployment, payout: Contract
) -> None:
    gateway = make_gateway(evm)
    assert gateway.settings.chains[CHAIN_ID].internal_transfers == "off"
    bills = eth_invoices(gateway, evm, 4)
    pay_from_contract(evm, payout, bills)
    assert sum(r.deposits for r in drain(watcher(gateway))) == 0


@pytest.fixture
def lagging(evm: Deployment) -> Iterator[FaultProxy]:
    proxy = FaultProxy(evm.chain.rpc_url, Faults(lag=3, lag_every=2))
    with proxy.running() as url:
        proxy.url = url  # type: ignore[attr-defined]
        yield proxy


@pytest.mark.parametrize("mode", ["debug", "trace"])
def test_traces_from_a_lagging_node_are_asked_again(
    evm: Deployment, payout: Contract, lagging: FaultProxy, mode: str
) -> None:
    url = str(lagging.url)  # type: ignore[attr-defined]
    gateway = make_gateway(evm, internal_transfers=mode, rpc_url=url, block_batch=1)
    bills = eth_invoices(gateway, evm, 4)
    w = watcher(gateway)
    pay_from_contract(evm, payout, bills)
    expected = [Decimal(20), Decimal(40), 0, 0]
    for _ in range(30):
        w.step()
        if [amount for amount, _ in paid(gateway, bills)] == expected:
            break
    for _ in range(3):  # and later passes count nothing twice
        w.step()
    assert paid(gateway, bills) == [(Decimal(20), [-2]), (Decimal(40), [-3]), (0, []), (0, [])]
    assert any(r.answer == "lagging" for r in lagging.requests)
