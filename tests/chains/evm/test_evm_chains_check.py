"""``paycore chains check`` on anvil: a good chain passes every line; each kind of problem
(node down, wrong chain id, no factory, no code, not a factory, token decimals or symbol
wrong, not a token, a watcher fallen behind) is one FAIL line and a non-zero exit."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any

import pytest
from evm_chain import Deployment
from evm_gateway import CHAIN_ID, drain, watcher

from paycore import ChainConfig, Gateway, Settings
from paycore.chains.health import check_chains
from paycore.runtime.cli import main


def _tokens(evm: Deployment, decimals: int = 6, symbol: str = "TUSDC") -> tuple[Any, ...]:
    return (
        {"address": evm.token.address, "symbol": symbol, "decimals": decimals},
        evm.token_no_return.address,
    )


def _config(evm: Deployment, **fields: Any) -> ChainConfig:
    values: dict[str, Any] = {
        "chain_id": CHAIN_ID,
        "name": "anvil",
        "confirmations": 0,
        "rpc_url": evm.chain.rpc_url,
        "factory": evm.factory.address,
        "tokens": _tokens(evm),
        "start_block": evm.chain.w3.eth.block_number,
        "poll_interval": 0.05,
    }
    values.update(fields)
    return ChainConfig(**values)


def _gateway(evm: Deployment, database: Path, config: ChainConfig) -> Gateway:
    settings = Settings(database_url=f"sqlite:///{database}", chains={CHAIN_ID: config})
    return Gateway(settings)


def _closed_port() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_a_good_chain_passes_every_check(evm: Deployment, tmp_path: Path) -> None:
    config = _config(evm)
    gateway = _gateway(evm, tmp_path / "p.db", config)
    try:
        before = check_chains(gateway.settings, gateway.chain_ledger)
        assert [f.ok for f in before] == [True] * 5, [f.line() for f in before]
        assert before[-1].text == "watcher: no cursor yet (no worker has scanned this chain)"
        drain(watcher(gateway))
        head = evm.chain.w3.eth.block_number
        found = check_chains(gateway.settings, gateway.chain_ledger)
    finally:
        gateway.close()
    lines = [f.line() for f in found]
    assert (
        lines[0]
        == f"ok   {CHAIN_ID} anvil: the node answers chain id {CHAIN_ID}, head block {head}"
    )
    assert lines[1] == (
        f"ok   {CHAIN_ID} anvil: factory {evm.factory.address} has code (CREATE2 prefix 0xff)"
    )
    assert (
        lines[2]
        == f"ok   {CHAIN_ID} anvil: token {evm.token.address}: TUSDC, 6 decimals, as configured"
    )
    # A plain address: read from the chain, and the entry to configure is printed.
    plain = evm.token_no_return.address
    assert lines[3] == (
        f"ok   {CHAIN_ID} anvil: token {plain}: TUSDT, 6 decimals; configure "
        f'{{"address": "{plain}", "symbol": "TUSDT", "decimals": 6}}'
    )
    assert lines[4].startswith(f"ok   {CHAIN_ID} anvil: watcher at block {head}, 0 blocks behind")
    assert "; lease held by " in lines[4]  # the watcher that just scanned


def test_each_problem_is_one_fail_line(evm: Deployment, tmp_path: Path) -> None:
    not_a_contract = "0x5a5A5a5a5A5a5a5a5a5A5a5A5A5a5a5A5A5A5A5A"  # EIP-55 of 0x5a5a...
    chains = {
        CHAIN_ID: _config(
            evm,
            factory=evm.token.address,  # a contract, but not a factory
            tokens=(*_tokens(evm, decimals=18), not_a_contract),
        ),
        1337: ChainConfig(1337, "wrong-id", 0, evm.chain.rpc_url),
        1: ChainConfig(1, "down", 12, _closed_port(), factory=evm.factory.address),
    }
    settings = Settings(database_url="memory://", chains=chains)
    found = check_chains(settings, None, timeout=2)
    failed = [f.line() for f in found if not f.ok]
    assert failed == [
        f"FAIL {CHAIN_ID} anvil: factory {evm.token.address}: create2Prefix() is no answer, "
        "not 0xff: not a PaycoreFactory for this chain's VM",
        f"FAIL {CHAIN_ID} anvil: token {evm.token.address}: decimals() is 6, configured 18",
        f"FAIL {CHAIN_ID} anvil: token {not_a_contract}: no decimals() "
        "(not a token contract here?)",
        f"FAIL 1337 wrong-id: the node answers chain id {CHAIN_ID}, configured 1337",
        failed[-1],
    ]
    assert failed[-1].startswith("FAIL 1 down: the node does not answer: chain node: eth_chainId")
    # The symbol is compared too; a missing factory and an address without code are named.
    wrong = {
        CHAIN_ID: _config(evm, factory=None, tokens=_tokens(evm, symbol="USDT")),
        1337: ChainConfig(1337, "x", 0, evm.chain.rpc_url),
    }
    found = check_chains(
        Settings(database_url="memory://", chains=wrong), None, chain_ids=[CHAIN_ID]
    )
    assert [f.line() for f in found if not f.ok] == [
        f"FAIL {CHAIN_ID} anvil: no factory configured (paycore contracts deploy)",
        f"FAIL {CHAIN_ID} anvil: token {evm.token.address}: symbol() is 'TUSDC', configured 'USDT'",
    ]
    empty = _config(evm, factory=not_a_contract, tokens=())
    found = check_chains(Settings(database_url="memory://", chains={CHAIN_ID: empty}), None)
    assert [f.line() for f in found if not f.ok] == [
        f"FAIL {CHAIN_ID} anvil: no contract at the factory address {empty.factory}"
    ]
    unknown = check_chains(Settings(database_url="memory://"), None, chain_ids=[99])
    assert [f.line() for f in unknown] == ["FAIL 99 ?: not a configured chain"]
    nothing = check_chains(Settings(database_url="memory://"), None)
    assert [f.line() for f in nothing] == ["FAIL 0 -: no chain has an rpc_url: nothing to check"]


def test_a_watcher_fallen_behind_is_a_problem(evm: Deployment, tmp_path: Path) -> None:
    config = _config(evm)
    gateway = _gateway(evm, tmp_path / "p.db", config)
    try:
        drain(watcher(gateway))
        at = evm.chain.w3.eth.block_number
        evm.chain.w3.provider.make_request("anvil_mine", [hex(40)])  # type: ignore[arg-type]
        found = check_chains(gateway.settings, gateway.chain_ledger, max_lag=30)
        ok = check_chains(gateway.settings, gateway.chain_ledger, max_lag=40)
    finally:
        gateway.close()
    assert (
        found[-1]
        .line()
        .startswith(
            f"FAIL {CHAIN_ID} anvil: watcher at block {at}, 40 blocks behind the confirmed head "
            f"{at + 40} (more than 30)"
        )
    )
    assert ok[-1].ok and [f.ok for f in found[:-1]] == [True] * 4


def test_the_command_exits_non_zero_on_any_problem(
    evm: Deployment,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    entry = {
        "name": "anvil",
        "confirmations": 0,
        "rpc_url": evm.chain.rpc_url,
        "factory": evm.factory.address,
        "tokens": [{"address": evm.token.address, "symbol": "TUSDC", "decimals": 6}],
    }
    monkeypatch.setenv("PAYCORE_CHAINS", json.dumps({str(CHAIN_ID): entry}))
    monkeypatch.setenv("PAYCORE_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    started = time.monotonic()
    assert main(["chains", "check"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and all(line.startswith("ok   ") for line in out), out
    assert time.monotonic() - started < 30
    monkeypatch.setenv(
        "PAYCORE_CHAINS", json.dumps({str(CHAIN_ID): {**entry, "factory": "0x" + "5a" * 20}})
    )
    assert main(["chains", "check", "--no-storage", "--chain-id", str(CHAIN_ID)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 3 and out[1].startswith(f"FAIL {CHAIN_ID} anvil: no contract at")
