"""``paycore contracts deploy`` and ``paycore chains check`` on Tron, against the local
TronGrid stand-in over real HTTP: the CreateSmartContract paycore builds and signs, the
unsigned one a hardware wallet signs (its JSON re-encoded independently to the same bytes,
as TronWeb checks before signing), and every check of a Tron chain."""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from decimal import Decimal

import pytest
from fake_trongrid import FakeTron, encode_raw, h20, keccak256, serve
from tron_env import CHAIN_ID, FACTORY, USDT, address_of, chain_config, key, make_chain

from paycore import ChainConfig, Settings
from paycore.chains.deploy import FactoryArgs, deploy_factory, factory_args
from paycore.chains.health import check_chains
from paycore.chains.tron.deploy import contract_address
from paycore.chains.tron.node import Node
from paycore.contracts import bytecode
from paycore.errors import InvalidInput
from paycore.runtime.cli import main

DEPLOYER = key("deployer")
ADMIN = address_of(key("admin"))


@pytest.fixture
def tron() -> Iterator[tuple[FakeTron, str]]:
    """A Nile-like chain whose blocks are mined every 50 ms while the test runs."""
    chain = make_chain()
    chain.chain_id = CHAIN_ID
    chain.genesis_balances[("trx", h20(address_of(DEPLOYER)))] = 10_000 * 10**6
    stop = threading.Event()

    def mine() -> None:
        while not stop.wait(0.05):
            chain.mine()

    miner = threading.Thread(target=mine, daemon=True)
    with serve(chain) as url:
        miner.start()
        try:
            yield chain, url
        finally:
            stop.set()
            miner.join()


def _config(url: str, **fields: object) -> ChainConfig:
    base = {"chain_id": CHAIN_ID, "name": "tron-nile", "confirmations": 19, "rpc_url": url}
    base.update(fields)
    return ChainConfig(native_symbol="TRX", native_decimals=6, **base)  # type: ignore[arg-type]


def _args(config: ChainConfig) -> FactoryArgs:
    return factory_args(
        config, admin=ADMIN, fee_recipient=ADMIN, fee=Decimal("1.5"), max_fee=Decimal(100)
    )


def test_the_factory_is_deployed_with_the_tvm_prefix(tron: tuple[FakeTron, str]) -> None:
    chain, url = tron
    config = _config(url)
    args = _args(config)
    assert (args.fee, args.max_fee, args.prefix) == (1_500_000, 100_000_000, 0x41)  # SUN
    done = deploy_factory(config, args, key=DEPLOYER.hex(), timeout=10)
    assert done.method == "tron" and done.tx_hash is not None and done.address.startswith("T")
    owner21 = bytes.fromhex("41" + h20(address_of(DEPLOYER)))
    # Where java-tron puts it: keccak256(txID ++ owner)[12:] behind 0x41, by the fake's own sum.
    assert h20(done.address) == keccak256(bytes.fromhex(done.tx_hash) + owner21)[12:].hex()
    code = chain.contract_code(h20(done.address))
    assert code == bytecode("PaycoreFactory") + args.encoded()
    assert code.endswith(b"\x41" + bytes(31))  # the prefix, the last constructor argument
    assert h20(ADMIN) in code[-160:].hex()  # the named admin, not the deployer


def test_an_unsigned_deployment_is_what_a_tron_wallet_signs(tron: tuple[FakeTron, str]) -> None:
    chain, url = tron
    config = _config(url)
    sender = address_of(DEPLOYER)
    done = deploy_factory(config, _args(config), sender=sender)
    tx = done.unsigned
    assert tx is not None and done.tx_hash is None
    raw = bytes.fromhex(tx["raw_data_hex"])
    assert tx["txID"] == hashlib.sha256(raw).hexdigest()
    # The JSON says what the bytes say: re-encoded by the fake's own protobuf writer.
    assert encode_raw(tx["raw_data"]) == raw
    value = tx["raw_data"]["contract"][0]["parameter"]["value"]
    assert value["owner_address"] == "41" + h20(sender)
    assert value["new_contract"]["bytecode"] == _args(config).init_code().hex()
    assert done.address == contract_address(bytes.fromhex(tx["txID"]), sender)
    assert chain.contract_code(h20(done.address)) is None  # nothing sent
    # The wallet signs txID (tronpy here, not paycore) and the signed bytes are broadcast.
    signature = DEPLOYER.sign_msg_hash(bytes.fromhex(tx["txID"])).hex()
    from paycore.chains.tron.rawtx import signed_transaction

    node = Node(url)
    sent = node.post(
        "wallet/broadcasthex", {"transaction": signed_transaction(raw, [signature]).hex()}
    )
    assert sent["result"] is True
    chain.mine()
    assert chain.contract_code(h20(done.address)) == _args(config).init_code()


def test_refusals(tron: tuple[FakeTron, str]) -> None:
    chain, url = tron
    nile = _config(url)
    shasta = ChainConfig(2494104990, "tron-shasta", 19, url, "TRX", 6)
    with pytest.raises(
        InvalidInput, match=f"the node answers for chain {CHAIN_ID}, not 2494104990"
    ):
        deploy_factory(shasta, _args(shasta), key=DEPLOYER.hex())
    with pytest.raises(InvalidInput, match="the key is T"):
        deploy_factory(nile, _args(nile), key=DEPLOYER.hex(), sender=ADMIN)
    with pytest.raises(InvalidInput, match="not a 32-byte hex private key"):
        deploy_factory(nile, _args(nile), key="T" * 64)
    with pytest.raises(InvalidInput, match="admin"):
        factory_args(nile, admin="0x12", fee_recipient=ADMIN, fee=Decimal(0), max_fee=Decimal(1))
    assert [p for p, _h, _b in chain.requests if p == "/wallet/broadcasthex"] == []


def test_the_command_on_tron(
    tron: tuple[FakeTron, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    chain, url = tron
    monkeypatch.setenv("PAYCORE_DEPLOYER_KEY", DEPLOYER.hex())
    code = main(
        ["contracts", "deploy", "--chain-id", str(CHAIN_ID), "--rpc-url", url, "--max-fee", "10"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "by a CreateSmartContract transaction" in out and "CREATE2 prefix 0x41" in out
    assert f"admin          {address_of(DEPLOYER)}" in out  # base58, the sender by default
    entry = json.loads(out.strip().splitlines()[-1])[str(CHAIN_ID)]
    assert entry["native_symbol"] == "TRX" and entry["tokens"][0]["symbol"] == "USDT"
    pasted = ChainConfig(chain_id=CHAIN_ID, **entry)
    assert chain.contract_code(h20(pasted.factory or "")) is not None


def test_chains_check_on_tron(tron: tuple[FakeTron, str]) -> None:
    chain, url = tron
    chain.mine(25)  # a chain older than the 20 blocks the history check looks through
    good = chain_config(url, chain, tokens=({"address": USDT, "symbol": "USDT", "decimals": 6},))
    settings = Settings(database_url="memory://", chains={CHAIN_ID: good})
    found = check_chains(settings, None)
    assert [f.ok for f in found] == [True, True, True, True], [f.line() for f in found]
    assert found[1].text == f"factory {FACTORY} has code (CREATE2 prefix 0x41)"
    assert found[2].text == f"token {USDT}: USDT, 6 decimals, as configured"
    assert found[3].text.startswith("transaction history: ")

    wrong = chain_config(url, chain, tokens=({"address": USDT, "symbol": "USDT", "decimals": 18},))
    found = check_chains(Settings(database_url="memory://", chains={CHAIN_ID: wrong}), None)
    assert [f.line() for f in found if not f.ok] == [
        f"FAIL {CHAIN_ID} tron-nile: token {USDT}: decimals() is 6, configured 18"
    ]
    nowhere = chain_config(url, chain, factory=address_of(key("nobody")))
    found = check_chains(Settings(database_url="memory://", chains={CHAIN_ID: nowhere}), None)
    assert [f.text for f in found if not f.ok] == [
        f"no contract at the factory address {nowhere.factory}"
    ]
    chain.chain_id = 2494104990  # the node is Shasta's
    found = check_chains(Settings(database_url="memory://", chains={CHAIN_ID: good}), None)
    assert [f.line() for f in found] == [
        f"FAIL {CHAIN_ID} tron-nile: the node answers chain id 2494104990, configured {CHAIN_ID}"
    ]
    chain.http_status = 503
    found = check_chains(Settings(database_url="memory://", chains={CHAIN_ID: good}), None)
    assert len(found) == 1 and found[0].line().startswith(
        f"FAIL {CHAIN_ID} tron-nile: the node does not answer: chain node: wallet/getblockbynum"
    )
    # The API key the node URL is configured with never shows in a finding.
    assert "test-api-key" not in found[0].line()


def test_a_tron_node_without_transaction_history_is_a_problem() -> None:
    """A node with ``transHistory`` off serves blocks but no transaction infos: it would never
    show a TRC20 deposit, so the check fails it (``paycore.chains.tron.health``)."""
    chain = make_chain()
    chain.chain_id = CHAIN_ID
    with serve(chain) as url:
        chain.send_trc20(USDT, address_of(key("payer")), ADMIN, 5)
        chain.mine(4)  # the transfer's block is below the confirmed head (2 confirmations)
        config = chain_config(url, chain)
        settings = Settings(database_url="memory://", chains={CHAIN_ID: config})
        kept = check_chains(settings, None)
        chain.history = False
        lost = check_chains(settings, None)
    assert kept[-1].ok and kept[-1].text.startswith("transaction history: transaction infos of")
    assert not lost[-1].ok
    assert "answers no transaction infos for block" in lost[-1].text
    assert [f.ok for f in lost[:-1]] == [True] * (len(lost) - 1)
