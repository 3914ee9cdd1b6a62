"""Unsigned transactions for the owner to sign: wallet deployment and withdrawal.

Pure: every chain fact (gas price, nonce, gas estimate, fee) comes in as an argument, so the
shapes the interface fixes -- hex ``gas``, ``gasPrice``, ``data``; a number ``nonce`` -- are
testable without a node. paycore never signs these; the merchant's wallet does.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from paycore.domain.records import Json

from . import abi

#: Headroom on top of ``eth_estimateGas``: the estimate is taken against the state of the
#: moment, and a deposit arriving before the owner signs can make the withdrawal dearer.
GAS_HEADROOM_PERCENT = 20


@attrs.frozen
class UnsignedTx:
    """A legacy-priced transaction (the interface gives ``gasPrice``) ready for eth_account."""

    chain_id: int
    from_: str
    to: str
    data: bytes
    gas: int
    gas_price: int
    nonce: int
    value: int = 0

    def to_wire(self) -> Json:
        """The interface's fields plus ``value`` (the withdrawal fee rides on it), ``chainId`` and
        ``from``, so the client can sign the dict as it is."""
        return {
            "to": self.to,
            "data": "0x" + self.data.hex(),
            "gas": hex(self.gas),
            "gasPrice": hex(self.gas_price),
            "nonce": self.nonce,
            "value": hex(self.value),
            "chainId": self.chain_id,
            "from": self.from_,
        }


def with_headroom(estimate: int) -> int:
    return estimate + estimate * GAS_HEADROOM_PERCENT // 100


def deploy_wallet_tx(
    *, chain_id: int, factory: str, owner: str, gas_estimate: int, gas_price: int, nonce: int
) -> UnsignedTx:
    """``factory.deployWallet(owner)``, sent by the owner (anyone may; the owner is fixed
    by the argument)."""
    return UnsignedTx(
        chain_id=chain_id,
        from_=owner,
        to=factory,
        data=abi.deploy_wallet_data(owner),
        gas=with_headroom(gas_estimate),
        gas_price=gas_price,
        nonce=nonce,
    )


def withdraw_call(token: str, to: str, amount: int, indexes: Sequence[int]) -> bytes:
    """Calldata of ``wallet.withdraw``; indexes ascending and unique so equal requests
    build byte-equal transactions."""
    return abi.withdraw_data(token, to, amount, sorted(set(indexes)))


def withdraw_tx(
    *,
    chain_id: int,
    wallet: str,
    owner: str,
    token: str,
    to: str,
    amount: int,
    indexes: Sequence[int],
    fee: int,
    gas_estimate: int,
    gas_price: int,
    nonce: int,
) -> UnsignedTx:
    """``wallet.withdraw(token, to, amount, indexes)`` with ``msg.value`` = the factory's fee:
    the fee is paid in native coin by the sender, never taken out of the withdrawn funds."""
    return UnsignedTx(
        chain_id=chain_id,
        from_=owner,
        to=wallet,
        data=withdraw_call(token, to, amount, indexes),
        gas=with_headroom(gas_estimate),
        gas_price=gas_price,
        nonce=nonce,
        value=fee,
    )
