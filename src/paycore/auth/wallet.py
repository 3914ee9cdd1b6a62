"""Owner wallet signatures over the fixed texts of docs/interface.md §Wallet signatures.

The texts are built here and nowhere else, so the server and the tests (and any Python
client) cannot drift apart on a colon or on the case of an address. Each text names the
operation, so a signature given for one call can never be presented to another.
"""

from __future__ import annotations

from ..domain.tokens import normalize_owner, tron_from_hex
from ..errors import AuthError, InvalidInput
from .signatures import WALLET_PREFIX, parse_public_key, public_key_text, recover_address
from .tron import recover_tron_address


def _owner_lower(owner: str) -> str:
    return normalize_owner(owner).lower()


def set_webhook_message(owner: str, url: str) -> str:
    return f"set-webhook:{_owner_lower(owner)}:{url}"


def accept_app_key_message(owner: str, app_key: str, salt: int) -> str:
    """What an app key signs to agree to act for ``owner`` (POST /addNewAppKey): the owner,
    the key itself and the call's salt in whole seconds, so the consent names whom it is
    for and is good for that one call only."""
    return f"accept-app-key:{_owner_lower(owner)}:{app_key.lower()}:{salt}"


def verify_app_key_consent(owner: str, app_key: str, salt: int, signature: object) -> None:
    """Check that ``app_key`` signed :func:`accept_app_key_message`: an address becomes an
    app key only when its holder agrees, or anyone could make another merchant's wallet
    an app key of theirs. 401 ``app key signature: ...`` otherwise."""
    prefix = "app key signature"
    message = accept_app_key_message(owner, app_key, salt)
    if recover_address(message, signature, prefix=prefix) != app_key:
        raise AuthError(
            f"not signed by {app_key}: the app key signs {message!r} (EIP-191)", prefix=prefix
        )


def get_webhook_message(owner: str) -> str:
    return f"get-webhook:{_owner_lower(owner)}"


def clear_webhook_message(owner: str) -> str:
    return f"clear-webhook:{_owner_lower(owner)}"


def poll_register_message(owner: str) -> str:
    return f"poll-register:{_owner_lower(owner)}"


def deregister_pubkey_message(public_key: str) -> str:
    """Signs the key, not the owner: whoever owns the key is looked up, not claimed."""
    return f"deregister-pubkey:{public_key_text(parse_public_key(public_key))}"


def signer_as_owner(signer: str, owner: str) -> str:
    """The recovered EVM ``signer`` written the way ``owner`` is, so the two compare as text.

    A Tron owner is the same secp256k1 key as an EVM address, only spelled in base58.
    """
    return tron_from_hex(signer) if owner.startswith("T") else signer


def verify_wallet_signature(
    message: str, signature: object, owner: object, *, field: str = "ownerAddress"
) -> str:
    """Check that ``owner`` signed ``message``; returns the owner normalised.

    A Tron (base58) owner may sign with TronLink instead of an EVM wallet: when the EIP-191
    reading does not give the owner, the TIP-191 one (``"\x19TRON Signed Message:\n"``) is
    tried. The texts signed are the same; only the wallet's prefix differs.

    Raises InvalidInput when ``owner`` is not an address or ``signature`` is absent (a
    malformed request), and AuthError with the ``wallet signature:`` text when the signature
    is malformed or was made by anyone else.
    """
    if owner is None:
        raise InvalidInput(field, "required")
    expected = normalize_owner(owner, field)
    if signature is None:
        raise InvalidInput("signature", "required")
    signer = recover_address(message, signature, prefix=WALLET_PREFIX)
    if signer_as_owner(signer, expected) == expected:
        return expected
    tron = expected.startswith("T")
    if tron and recover_tron_address(message, signature, prefix=WALLET_PREFIX) == expected:
        return expected
    raise AuthError(f"signer does not match {field}", prefix=WALLET_PREFIX)
