"""What a chain backend offers the salt-signed management calls: the wallet's on-chain state
and the unsigned transactions that bring it in line with paycore's records.

paycore holds no merchant key, so it cannot change a wallet contract itself. The management
calls therefore change paycore's own records at once and hand back, when the chain differs,
the transaction the owner (or app key) signs to make the wallet agree (docs/management.md).
A backend without this Protocol (or a chain without a deployed wallet) leaves the calls
storage-only; ``ChainSync`` says which case the caller is in.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

from ..domain.records import Json

#: The wallet functions a management call can ask for, by their Solidity names.
ADD_APP_KEY = "addAppKey"
REMOVE_APP_KEY = "removeAppKey"
DISABLE_INDEX = "disableWalletIndex"
ENABLE_INDEX = "enableWalletIndex"
ACTIONS = (ADD_APP_KEY, REMOVE_APP_KEY, DISABLE_INDEX, ENABLE_INDEX)


@attrs.frozen
class ChainSync:
    """The owner's wallet on one chain, as it stands against a management change.

    ``in_sync``: the wallet already holds the wanted state, nothing to send. Otherwise, on a
    deployed wallet, ``transaction`` is the unsigned call that makes it so, from the signer
    when the wallet accepts it, else from the owner.
    """

    chain_id: int
    wallet: str
    deployed: bool
    in_sync: bool
    transaction: Json | None = None

    def to_wire(self) -> Json:
        return {
            "chainId": self.chain_id,
            "walletAddress": self.wallet,
            "deployed": self.deployed,
            "inSync": self.in_sync,
        }


@runtime_checkable
class WalletAdminBackend(Protocol):
    """The on-chain side of app keys and disabled wallet indexes."""

    def wallet_deployed(self, chain_id: int, owner: str) -> bool:
        """Whether ``owner``'s wallet contract exists on the chain."""

    def wallet_admin(
        self, chain_id: int, owner: str, signer: str, action: str, argument: str | int
    ) -> ChainSync:
        """Compare the wallet with ``action(argument)`` done; build its transaction if not.
        Raises ``Conflict`` when the wallet would refuse the call."""

    def app_keys_on_chain(self, chain_id: int, owner: str) -> list[str] | None:
        """The wallet's app keys, or ``None`` when no wallet is deployed."""
