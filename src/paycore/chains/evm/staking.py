"""``EvmStaking``: the staking helpers against one ``PaycoreStaking`` contract on one chain.

Reads go out as one JSON-RPC batch per request. Each builder checks what the contract would
check -- balance, allowance, stake, rewards -- so the owner gets a 400 saying why instead of
a transaction that reverts, and then asks the node to estimate the real call.
"""

from __future__ import annotations

from typing import Any

from paycore.domain.records import Json
from paycore.errors import InvalidInput

from . import abi, txbuild
from .chain import EvmChain
from .rpc import Call, RpcError, execution_failure


def _call(to: str, signature: str, *args: object, types: tuple[str, ...] = ()) -> Call:
    return (
        "eth_call",
        [{"to": to, "data": abi.view_data(signature, *args, types=types)}, "latest"],
    )


def _text(result: object) -> str:
    return "" if isinstance(result, RpcError) else abi.decode_string(str(result)) or ""


def _uint(result: object) -> int:
    return 0 if isinstance(result, RpcError) or result is None else abi.decode_uint(str(result))


class EvmStaking:
    """A ``paycore.management.staking.StakingBackend`` for ``contract`` on ``chain``."""

    def __init__(self, chain: EvmChain, contract: str) -> None:
        self.chain = chain
        self.contract = contract

    # -- reads ----------------------------------------------------------------------------
    def info(self, owners: list[str], tokens: list[str]) -> Json:
        """Per owner: native balance, each token's balance and facts, and per token the
        stake and the allowance given to the contract; the ETH rewards claimable over all
        of ``tokens`` ride on the first ``extra`` element (docs/interface.md)."""
        facts: list[Call] = []
        for token in tokens:
            facts += [
                _call(token, "symbol()"),
                _call(token, "decimals()"),
                _call(token, "name()"),
            ]
        per_owner = 1 + 3 * len(tokens) + 1
        reads: list[Call] = []
        for owner in owners:
            reads.append(("eth_getBalance", [owner, "latest"]))
            for token in tokens:
                reads += [
                    _call(token, "balanceOf(address)", owner, types=("address",)),
                    _call(
                        self.contract,
                        "stakedOf(address,address)",
                        token,
                        owner,
                        types=("address", "address"),
                    ),
                    _call(
                        token,
                        "allowance(address,address)",
                        owner,
                        self.contract,
                        types=("address", "address"),
                    ),
                ]
            reads.append(
                _call(
                    self.contract,
                    "earnedAll(address,address[])",
                    owner,
                    tokens,
                    types=("address", "address[]"),
                )
            )
        outcomes = self.chain.rpc.batch_outcomes(facts + reads)
        meta = outcomes[: len(facts)]
        answer: Json = {}
        for n, owner in enumerate(owners):
            row = outcomes[len(facts) + n * per_owner : len(facts) + (n + 1) * per_owner]
            if isinstance(row[0], RpcError):
                raise row[0]
            token_rows: list[Json] = []
            extra: list[Json] = []
            for t in range(len(tokens)):
                balance, staked, allowance = row[1 + 3 * t : 4 + 3 * t]
                token_rows.append(
                    {
                        "balance": str(_uint(balance)),
                        "symbol": _text(meta[3 * t]),
                        "decimals": str(_uint(meta[3 * t + 1])),
                        "name": _text(meta[3 * t + 2]),
                    }
                )
                extra.append(
                    {"staked": str(_uint(staked)), "tokenAllowance": str(_uint(allowance))}
                )
            if extra:
                extra[0]["rewards"] = str(_uint(row[-1]))
            answer[owner] = {"balance": str(int(row[0], 16)), "tokens": token_rows, "extra": extra}
        return answer

    # -- transactions ---------------------------------------------------------------------
    def stake(self, owner: str, token: str, value: int) -> Json:
        held, allowance = self._reads(
            _call(token, "balanceOf(address)", owner, types=("address",)),
            _call(
                token,
                "allowance(address,address)",
                owner,
                self.contract,
                types=("address", "address"),
            ),
        )
        if held < value:
            raise InvalidInput("value", f"more than the {held} base units {owner} holds")
        if allowance < value:
            # Exactly what this stake needs, never an unlimited allowance.
            data = abi.encode_call("approve(address,uint256)", ["address", "uint256"],
                                   [self.contract, value])  # fmt: skip
            return self._tx(owner, token, data, is_approve=True)
        data = abi.encode_call("stake(address,uint256)", ["address", "uint256"], [token, value])
        return self._tx(owner, self.contract, data)

    def unstake(self, owner: str, token: str, value: int) -> Json:
        (staked,) = self._reads(
            _call(
                self.contract,
                "stakedOf(address,address)",
                token,
                owner,
                types=("address", "address"),
            )
        )
        if staked < value:
            raise InvalidInput("value", f"more than the {staked} base units {owner} has staked")
        data = abi.encode_call("unstake(address,uint256)", ["address", "uint256"], [token, value])
        return self._tx(owner, self.contract, data)

    def claim(self, owner: str, tokens: list[str]) -> Json:
        (earned,) = self._reads(
            _call(
                self.contract,
                "earnedAll(address,address[])",
                owner,
                tokens,
                types=("address", "address[]"),
            )
        )
        if earned == 0:
            raise InvalidInput("tokenList", f"{owner} has no rewards to claim on these tokens")
        data = abi.encode_call("claim(address[])", ["address[]"], [tokens])
        return self._tx(owner, self.contract, data)

    # -- helpers --------------------------------------------------------------------------
    def _reads(self, *calls: Call) -> list[int]:
        outcomes = self.chain.rpc.batch_outcomes(
            [("eth_getCode", [self.contract, "latest"]), *calls]
        )
        code = outcomes[0]
        if isinstance(code, RpcError):
            raise code
        if code in ("0x", "0x0", "", None):
            raise InvalidInput("chainId", f"no staking contract at {self.contract}")
        values: list[int] = []
        for outcome in outcomes[1:]:
            if isinstance(outcome, RpcError):
                raise InvalidInput("tokenAddress", f"the token does not answer: {outcome.text}")
            values.append(abi.decode_uint(outcome))
        return values

    def _tx(self, owner: str, to: str, data: bytes, *, is_approve: bool = False) -> Json:
        gas_price, nonce = self.chain.rpc.batch(
            [("eth_gasPrice", []), ("eth_getTransactionCount", [owner, "pending"])]
        )
        request: dict[str, Any] = {"from": owner, "to": to, "data": "0x" + data.hex()}
        try:
            estimate = self.chain.rpc.call("eth_estimateGas", [request])
        except RpcError as exc:
            reason = execution_failure(exc)
            if reason is None:  # the node's trouble, not the call's: a 502
                raise
            raise InvalidInput("ownerAddress", f"the transaction would fail: {reason}") from None
        tx = txbuild.UnsignedTx(
            chain_id=self.chain.chain_id,
            from_=owner,
            to=to,
            data=data,
            gas=txbuild.with_headroom(int(estimate, 16)),
            gas_price=int(gas_price, 16),
            nonce=int(nonce, 16),
        )
        return {**tx.to_wire(), "isApprove": is_approve}
