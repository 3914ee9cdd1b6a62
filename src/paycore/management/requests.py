"""The salt-signed management calls as typed requests (docs/interface.md §Salt-signed calls).

``paycore.api.requests`` reads each from the wire; :class:`~.service.Management` takes the
typed request for its values and, beside it, the body as signed, which the signature covers
(``paycore.auth.salted``: the JSON text the client wrote, in its key order).
"""

from __future__ import annotations

import attrs

from ..domain.fields import Address, BigUint, ChainId, Salt

_SALT = "unix time in seconds (a number or digits), within the salt window"
_SALTED = "EIP-191 signature over the body without signature, as JSON.stringify writes it"
_OWNER = "the owner meant, when one of its app keys signs"


@attrs.frozen
class ChangeCallbackUrl:
    salt: Salt = attrs.field(metadata={"doc": _SALT})
    signature: str = attrs.field(metadata={"doc": _SALTED})
    new_callback_url: str = attrs.field(
        metadata={"doc": "https URL the webhooks go to from now on"}
    )
    chain_id: ChainId = attrs.field()
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@attrs.frozen
class SetEmailNotifications:
    salt: Salt = attrs.field(metadata={"doc": _SALT})
    signature: str = attrs.field(metadata={"doc": _SALTED})
    email_address: str = attrs.field(
        metadata={"doc": "a plain address; empty to remove the setting"}
    )
    chain_id: ChainId = attrs.field()
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@attrs.frozen
class WalletIndexChange:
    salt: Salt = attrs.field(metadata={"doc": _SALT})
    signature: str = attrs.field(metadata={"doc": _SALTED})
    chain_id: ChainId = attrs.field()
    wallet_index: BigUint = attrs.field(metadata={"doc": "the deposit index"})
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@attrs.frozen
class AppKeyChange:
    salt: Salt = attrs.field(metadata={"doc": _SALT})
    signature: str = attrs.field(metadata={"doc": _SALTED})
    app_key_address: Address = attrs.field(metadata={"doc": "an EVM account"})
    chain_id: ChainId | None = attrs.field(
        default=None, metadata={"doc": "also build the wallet's transaction there"}
    )
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@attrs.frozen
class NewAppKey:
    """POST /addNewAppKey: the owner's (or an app key's) salt-signed body, which carries the
    new key's own consent (docs/management.md §App keys)."""

    salt: Salt = attrs.field(metadata={"doc": _SALT})
    signature: str = attrs.field(metadata={"doc": _SALTED})
    app_key_address: Address = attrs.field(metadata={"doc": "an EVM account"})
    app_key_signature: str = attrs.field(
        metadata={
            "doc": "the app key's EIP-191 signature of "
            "accept-app-key:{ownerAddressLower}:{appKeyAddressLower}:{salt}: its holder agrees"
        }
    )
    chain_id: ChainId | None = attrs.field(
        default=None, metadata={"doc": "also build the wallet's transaction there"}
    )
    owner_address: Address | None = attrs.field(default=None, metadata={"doc": _OWNER})


@attrs.frozen
class AppKeysQuery:
    owner_address: Address = attrs.field()
    chain_id: ChainId | None = attrs.field(
        default=None, metadata={"doc": "also say which keys the wallet there holds"}
    )
