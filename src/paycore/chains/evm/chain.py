"""One EVM chain as the backend sees it: its config, its node, its factory, token facts.

Addresses come from ``create2`` (no RPC); token decimals and symbols are asked once and
kept, since a deployed token's ``decimals()`` never changes and the watcher needs it for
every transfer it values.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from functools import lru_cache

from paycore.chains.common import CONTRACT_TYPES as CONTRACT_TYPES
from paycore.chains.common import ChainBase, TokenMeta
from paycore.config import ChainConfig
from paycore.domain.tokens import NATIVE, to_checksum

from . import abi, create2
from .logs import LogReader
from .rpc import Call, Rpc, RpcError


class EvmChain(ChainBase):
    """A configured chain with both ``rpc_url`` and ``factory`` (the plugin checks)."""

    def __init__(self, config: ChainConfig, rpc: Rpc | None = None) -> None:
        super().__init__(config)
        self.rpc = rpc or Rpc(
            config.endpoints,
            batch_size=config.rpc_batch,
            timeout=config.rpc_timeout,
            max_wait=config.rpc_max_wait,
            name=f"chain {config.chain_id}",
        )
        #: eth_getLogs in pieces the provider accepts; the span it learns is the chain's.
        self.logs = LogReader(self.rpc, config.block_batch, name=f"chain {config.chain_id}")
        #: Serialises the faucet's nonce: two concurrent calls must not reuse one.
        self.faucet_lock = threading.Lock()

    # -- addresses (pure) -----------------------------------------------------------------
    def wallet_of(self, owner: str) -> str:
        return _wallet_address(self.factory, owner)

    def _deposit_at(self, wallet: str, index: int) -> str:
        return _deposit_address(wallet, index)

    # -- tokens ---------------------------------------------------------------------------
    def token_meta(self, tokens: Iterable[str]) -> dict[str, TokenMeta]:
        """Decimals and symbol of each token that has them; one batch for the unknown ones.
        A contract without ``decimals()`` is left out: it cannot be valued."""
        wanted = list(dict.fromkeys(tokens))
        missing = [t for t in wanted if t not in self._tokens]
        if missing:
            calls: list[Call] = []
            for token in missing:
                calls.append(_eth_call(token, abi.view_data("decimals()")))
                calls.append(_eth_call(token, abi.view_data("symbol()")))
            outcomes = self.rpc.batch_outcomes(calls)
            with self._tokens_lock:
                for i, token in enumerate(missing):
                    decimals, symbol = outcomes[2 * i], outcomes[2 * i + 1]
                    if isinstance(decimals, RpcError) or decimals in (None, "0x", ""):
                        continue
                    value = abi.decode_uint(decimals)
                    if value > 77:  # 10**78 > 2**256: not a real decimals()
                        continue
                    name = None if isinstance(symbol, RpcError) else abi.decode_string(symbol)
                    self._tokens[token] = TokenMeta(token, name or token[:10], value)
        return {t: self._tokens[t] for t in wanted if t in self._tokens}

    # -- chain reads ----------------------------------------------------------------------
    def balance_call(self, token: str, holder: str, block: str = "latest") -> Call:
        """The call that reads ``holder``'s balance of ``token`` (native: eth_getBalance)."""
        if token == NATIVE:
            return ("eth_getBalance", [holder, block])
        return _eth_call(
            token, abi.view_data("balanceOf(address)", holder, types=["address"]), block
        )

    def fee_call(self) -> Call:
        return _eth_call(self.factory, abi.view_data("feeSettings()"))

    @staticmethod
    def fee_from(result: str) -> int:
        """The fee a withdrawal pays, from a ``feeSettings()`` result: zero when the
        recipient is the zero address, as ``PaycoreWallet.withdraw`` reads it."""
        recipient, fee = abi.word_int(result, 0), abi.word_int(result, 1)
        return fee if recipient else 0

    def disabled_call(self, wallet: str, index: int) -> Call:
        return _eth_call(
            wallet, abi.view_data("isWalletIndexDisabled(uint256)", index, types=["uint256"])
        )


def _eth_call(to: str, data: str, block: str = "latest") -> Call:
    return ("eth_call", [{"to": to, "data": data}, block])


@lru_cache(maxsize=4096)
def _wallet_address(factory: str, owner: str) -> str:
    return create2.wallet_address(factory, to_checksum(owner))


@lru_cache(maxsize=1 << 16)
def _deposit_address(wallet: str, index: int) -> str:
    return create2.deposit_address(wallet, index)
