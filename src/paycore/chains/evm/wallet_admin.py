"""The on-chain side of the management calls for one EVM chain: read what the owner's
``PaycoreWallet`` holds (app keys, disabled indexes) and build the unsigned call that makes
it match paycore's records (``paycore.chains.admin``).

Who sends. The wallet accepts ``addAppKey`` and the index calls from the owner or an app key
it knows, ``removeAppKey`` from the owner only. The transaction is built from the signer of
the management call when the wallet accepts that signer, otherwise from the owner: ``from``
tells the client whose key must sign it.
"""

from __future__ import annotations

from typing import Any

import attrs
from eth_abi.abi import decode as abi_decode

from paycore.chains.admin import (
    ADD_APP_KEY,
    DISABLE_INDEX,
    ENABLE_INDEX,
    REMOVE_APP_KEY,
    ChainSync,
)
from paycore.domain.tokens import to_checksum
from paycore.errors import Conflict, InvalidInput

from . import abi, txbuild
from .chain import EvmChain
from .rpc import RpcError, execution_failure


@attrs.frozen
class _Action:
    function: str  # the wallet function that makes the change
    view: str  # the wallet view that reads the current state
    arg_type: str
    wanted: bool  # what ``view`` returns once the change is made
    owner_only: bool


_ACTIONS = {
    ADD_APP_KEY: _Action("addAppKey(address)", "isAppKey(address)", "address", True, False),
    REMOVE_APP_KEY: _Action("removeAppKey(address)", "isAppKey(address)", "address", False, True),
    DISABLE_INDEX: _Action(
        "disableWalletIndex(uint256)", "isWalletIndexDisabled(uint256)", "uint256", True, False
    ),
    ENABLE_INDEX: _Action(
        "enableWalletIndex(uint256)", "isWalletIndexDisabled(uint256)", "uint256", False, False
    ),
}


def _has_code(result: object) -> bool:
    return isinstance(result, str) and result not in ("0x", "0x0", "")


def _call(to: str, data: str) -> tuple[str, list[Any]]:
    return ("eth_call", [{"to": to, "data": data}, "latest"])


def wallet_deployed(chain: EvmChain, owner: str) -> bool:
    return _has_code(chain.rpc.call("eth_getCode", [chain.wallet_of(owner), "latest"]))


def wallet_admin(
    chain: EvmChain, owner: str, signer: str, action: str, argument: str | int
) -> ChainSync:
    """Where the wallet stands against ``action(argument)``, and the call if it differs."""
    try:
        spec = _ACTIONS[action]
    except KeyError:
        raise ValueError(f"unknown wallet action {action!r}") from None
    wallet = chain.wallet_of(owner)
    is_app_key = "isAppKey(address)"
    code, state, signer_is_key, gas_price = chain.rpc.batch(
        [
            ("eth_getCode", [wallet, "latest"]),
            _call(wallet, abi.view_data(spec.view, argument, types=[spec.arg_type])),
            _call(wallet, abi.view_data(is_app_key, signer, types=["address"])),
            ("eth_gasPrice", []),
        ]
    )
    if not _has_code(code):
        return ChainSync(chain.chain_id, wallet, deployed=False, in_sync=False)
    if (abi.decode_uint(state) != 0) == spec.wanted:
        return ChainSync(chain.chain_id, wallet, deployed=True, in_sync=True)
    accepted = signer == owner or (not spec.owner_only and abi.decode_uint(signer_is_key) != 0)
    sender = signer if accepted else owner
    data = abi.encode_call(spec.function, [spec.arg_type], [argument])
    nonce = chain.rpc.call("eth_getTransactionCount", [sender, "pending"])
    try:
        estimate = chain.rpc.call(
            "eth_estimateGas", [{"from": sender, "to": wallet, "data": "0x" + data.hex()}]
        )
    except RpcError as exc:
        reason = execution_failure(exc)
        if reason is None:  # the node's trouble, not the wallet's refusal: a 502
            raise
        raise Conflict(
            f"Conflict: the wallet {wallet} on chain {chain.chain_id} refuses "
            f"{spec.function.split('(')[0]}: {str(reason)[:200]}"
        ) from None
    tx = txbuild.UnsignedTx(
        chain_id=chain.chain_id,
        from_=sender,
        to=wallet,
        data=data,
        gas=txbuild.with_headroom(int(estimate, 16)),
        gas_price=int(gas_price, 16),
        nonce=int(nonce, 16),
    )
    return ChainSync(chain.chain_id, wallet, deployed=True, in_sync=False, transaction=tx.to_wire())


def app_keys_on_chain(chain: EvmChain, owner: str) -> list[str] | None:
    wallet = chain.wallet_of(owner)
    code, listed = chain.rpc.batch(
        [("eth_getCode", [wallet, "latest"]), _call(wallet, abi.view_data("appKeys()"))]
    )
    if not _has_code(code):
        return None
    try:
        (keys,) = abi_decode(["address[]"], bytes.fromhex(listed.removeprefix("0x")))
    except Exception:  # not a PaycoreWallet answer: a node or contract mismatch
        raise InvalidInput("chainId", f"{wallet} does not answer appKeys()") from None
    return [to_checksum(key) for key in keys]
