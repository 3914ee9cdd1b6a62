"""``paycore chains check``: whether each configured chain is what its configuration says.

A wrong chain id in a node URL, a factory address from another chain, a token listed with
the wrong decimals or a watcher that stopped are each silent in production: invoices are
created, and the money either never shows up or is valued a thousand-fold wrong. Each is
checked here against the chain itself, one finding per fact, so an operator (or a deploy
script, by the exit status) sees every problem at once:

- the node answers, with the configured chain id (EVM ``eth_chainId``; Tron: the last four
  bytes of the genesis block's id);
- the factory has code, and its ``create2Prefix()`` is this VM's (0xff EVM, 0x41 Tron);
- each configured token answers ``symbol()`` and ``decimals()``, equal to the configured
  ones where the configuration (or the registry) gives them;
- on Tron, that the node serves transaction infos (``paycore.chains.tron.health``): one
  that keeps no history shows no TRC20 deposit;
- the watcher's cursor (from storage) and how far it is behind the confirmed head.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence

import attrs

from ..config import ChainConfig, Settings
from ..domain.tokens import ChainKind
from ..ops.redaction import redact
from .deploy import PREFIXES
from .ledger import ChainLedger

#: Blocks the watcher may be behind the confirmed head before it is a problem: a few polls'
#: worth on the fastest default chains (Arbitrum makes four blocks a second).
DEFAULT_MAX_LAG = 1000


@attrs.frozen
class Finding:
    """One checked fact of one chain."""

    chain_id: int
    name: str
    ok: bool
    text: str

    def line(self) -> str:
        return f"{'ok' if self.ok else 'FAIL':<4} {self.chain_id} {self.name}: {self.text}"


#: What a chain's checks make a finding with: ok or not, and the text.
_Make = Callable[[bool, str], Finding]


class _Probe:
    """The reads a check makes, for one kind of chain."""

    def chain_id(self) -> int:
        raise NotImplementedError

    def head(self) -> int:
        raise NotImplementedError

    def has_code(self, address: str) -> bool:
        raise NotImplementedError

    def call(self, contract: str, signature: str) -> str | None:
        """The 0x hex result of a view without arguments; None when it fails."""
        raise NotImplementedError


class _EvmProbe(_Probe):
    def __init__(self, config: ChainConfig, timeout: float) -> None:
        from .evm.rpc import Rpc

        assert config.rpc_url is not None
        self.rpc = Rpc(config.rpc_url, batch_size=config.rpc_batch, timeout=timeout)

    def chain_id(self) -> int:
        return int(self.rpc.call("eth_chainId"), 16)

    def head(self) -> int:
        return int(self.rpc.call("eth_blockNumber"), 16)

    def has_code(self, address: str) -> bool:
        code = self.rpc.call("eth_getCode", [address, "latest"])
        return isinstance(code, str) and code not in ("0x", "0x0", "")

    def call(self, contract: str, signature: str) -> str | None:
        from .evm import abi
        from .evm.rpc import RpcError, execution_failure

        try:
            result = self.rpc.call(
                "eth_call", [{"to": contract, "data": abi.view_data(signature)}, "latest"]
            )
        except RpcError as exc:
            if execution_failure(exc) is None:
                raise
            return None
        return result if isinstance(result, str) and result not in ("0x", "") else None


class _TronProbe(_Probe):
    def __init__(self, config: ChainConfig, timeout: float) -> None:
        from .tron.node import Node

        assert config.rpc_url is not None
        self.node = Node(
            config.rpc_url, api_key=config.api_key, timeout=timeout, rate_limit=config.rate_limit
        )

    def chain_id(self) -> int:
        from .tron.deploy import chain_id_of

        return chain_id_of(self.node)

    def head(self) -> int:
        block = self.node.post("wallet/getnowblock", {})
        return int(block["block_header"]["raw_data"]["number"])

    def has_code(self, address: str) -> bool:
        found = self.node.post("wallet/getcontract", {"value": address, "visible": True})
        return isinstance(found, dict) and bool(found.get("bytecode"))

    def call(self, contract: str, signature: str) -> str | None:
        from .tron.chain import ZERO_CALLER
        from .tron.node import NodeError, call_fails, node_message

        body = {
            "owner_address": ZERO_CALLER,
            "contract_address": contract,
            "function_selector": signature,
            "parameter": "",
            "visible": True,
        }
        answer = self.node.post("wallet/triggerconstantcontract", body)
        result = answer.get("result") if isinstance(answer, dict) else None
        result = result if isinstance(result, dict) else {}
        if result.get("result") is not True or result.get("code") not in (None, "SUCCESS"):
            if call_fails(result.get("code"), result.get("message")):
                return None
            raise NodeError("wallet/triggerconstantcontract", node_message(result.get("message")))
        tx = answer.get("transaction") if isinstance(answer.get("transaction"), dict) else {}
        rets = tx.get("ret") if isinstance(tx, dict) else None
        failed = isinstance(rets, list) and rets and rets[0].get("ret") == "FAILED"
        outputs = answer.get("constant_result")
        output = outputs[0] if isinstance(outputs, list) and outputs else ""
        if failed or result.get("message") or not isinstance(output, str) or not output:
            return None
        return "0x" + output


def _probe(config: ChainConfig, timeout: float) -> _Probe:
    return (
        _TronProbe(config, timeout) if config.kind is ChainKind.TRON else _EvmProbe(config, timeout)
    )


def check_chains(
    settings: Settings,
    ledger: ChainLedger | None,
    *,
    chain_ids: Sequence[int] = (),
    max_lag: int = DEFAULT_MAX_LAG,
    timeout: float = 10.0,
    now_ms: int | None = None,
) -> list[Finding]:
    """Every finding for the chains ``chain_ids`` (default: each chain with an
    ``rpc_url``). ``ledger`` reads the watchers' cursors; None leaves them out."""
    found: list[Finding] = []
    if chain_ids:
        configs = []
        for chain_id in chain_ids:
            config = settings.chains.get(chain_id)
            if config is None:
                found.append(Finding(chain_id, "?", False, "not a configured chain"))
            else:
                configs.append(config)
    else:
        configs = [c for c in settings.chains.values() if c.rpc_url]
        if not configs:
            return [Finding(0, "-", False, "no chain has an rpc_url: nothing to check")]
    now = int(time.time() * 1000) if now_ms is None else now_ms
    for config in configs:
        found += check_chain(config, ledger, max_lag=max_lag, timeout=timeout, now_ms=now)
    return found


def check_chain(
    config: ChainConfig,
    ledger: ChainLedger | None,
    *,
    max_lag: int = DEFAULT_MAX_LAG,
    timeout: float = 10.0,
    now_ms: int,
) -> list[Finding]:
    """The findings of one chain; a node that does not answer, or answers for another
    chain, ends its checks (the rest would read the wrong chain)."""

    def finding(ok: bool, text: str) -> Finding:
        return Finding(config.chain_id, config.name, ok, redact(text))

    if not config.rpc_url:
        return [finding(False, "no rpc_url configured")]
    probe = _probe(config, timeout)
    try:
        answered = probe.chain_id()
        head = probe.head()
    except Exception as exc:  # any failure to answer is the finding, never a crash
        return [finding(False, f"the node does not answer: {_reason(exc)}")]
    if answered != config.chain_id:
        return [
            finding(False, f"the node answers chain id {answered}, configured {config.chain_id}")
        ]
    out = [finding(True, f"the node answers chain id {answered}, head block {head}")]
    out += _factory(config, probe, finding)
    out += _tokens(config, probe, finding)
    if isinstance(probe, _TronProbe) and config.factory is not None:
        out.append(_tron_history(config, probe, finding))
    if ledger is not None:
        out.append(_watcher(config, ledger, head, max_lag, now_ms, finding))
    return out


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "text", None) or f"{type(exc).__name__}: {exc}"
    return " ".join(str(text).split())[:300]


def _factory(config: ChainConfig, probe: _Probe, finding: _Make) -> list[Finding]:
    factory = config.factory
    if factory is None:
        return [finding(False, "no factory configured (paycore contracts deploy)")]
    try:
        if not probe.has_code(factory):
            return [finding(False, f"no contract at the factory address {factory}")]
        prefix = probe.call(factory, "create2Prefix()")
    except Exception as exc:
        return [finding(False, f"factory {factory}: {_reason(exc)}")]
    wanted = PREFIXES[config.kind]
    got = int(prefix[2:4], 16) if prefix and len(prefix) >= 4 else None
    if got != wanted:
        shown = "no answer" if got is None else f"0x{got:02x}"
        return [
            finding(
                False,
                f"factory {factory}: create2Prefix() is {shown}, not 0x{wanted:02x}: "
                "not a PaycoreFactory for this chain's VM",
            )
        ]
    return [finding(True, f"factory {factory} has code (CREATE2 prefix 0x{wanted:02x})")]


def _tokens(config: ChainConfig, probe: _Probe, finding: _Make) -> Iterable[Finding]:
    from .evm import abi

    for token in dict.fromkeys(config.tokens):
        try:
            decimals_hex = probe.call(token, "decimals()")
            symbol_hex = probe.call(token, "symbol()")
        except Exception as exc:
            yield finding(False, f"token {token}: {_reason(exc)}")
            continue
        decimals = abi.decode_uint(decimals_hex) if decimals_hex else None
        symbol = abi.decode_string(symbol_hex) if symbol_hex else None
        if decimals is None or decimals > 77:
            yield finding(False, f"token {token}: no decimals() (not a token contract here?)")
            continue
        known = config.token_info.get(token)
        if known is None:
            entry = f'{{"address": "{token}", "symbol": "{symbol}", "decimals": {decimals}}}'
            yield finding(True, f"token {token}: {symbol}, {decimals} decimals; configure {entry}")
        elif known.decimals != decimals:
            yield finding(
                False,
                f"token {token}: decimals() is {decimals}, configured {known.decimals}",
            )
        elif known.symbol != symbol:
            yield finding(
                False, f"token {token}: symbol() is {symbol!r}, configured {known.symbol!r}"
            )
        else:
            yield finding(True, f"token {token}: {symbol}, {decimals} decimals, as configured")


def _tron_history(config: ChainConfig, probe: _TronProbe, finding: _Make) -> Finding:
    """Whether the node keeps transaction history, where every TRC20 deposit is
    (``paycore.chains.tron.health``): a node that does not sees no token payment at all."""
    from .tron.chain import TronChain
    from .tron.health import check_history

    checked = check_history(TronChain(config, probe.node))
    return finding(checked.ok, f"transaction history: {checked.detail}")


def _watcher(
    config: ChainConfig,
    ledger: ChainLedger,
    head: int,
    max_lag: int,
    now_ms: int,
    finding: _Make,
) -> Finding:
    try:
        cursor = ledger.cursor(config.chain_id)
    except Exception as exc:
        return finding(False, f"watcher: storage: {_reason(exc)}")
    if cursor is None or cursor.block_number is None:
        return finding(True, "watcher: no cursor yet (no worker has scanned this chain)")
    confirmed = head - config.confirmations
    lag = max(0, confirmed - cursor.block_number)
    if cursor.holder and cursor.lease_until > now_ms:
        lease = f"lease held by {cursor.holder}"
    else:
        lease = "no worker holds the lease"
    at = cursor.block_number
    text = f"watcher at block {at}, {lag} blocks behind the confirmed head {confirmed}"
    if lag > max_lag:
        return finding(False, f"{text} (more than {max_lag}); {lease}")
    return finding(True, f"{text}; {lease}")
