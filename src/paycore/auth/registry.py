"""Registering, refreshing, listing and deregistering session keys.

The interface is docs/interface.md §Session keys.

Owner wallet signatures authorise changes here; :mod:`.session` then honours the keys on each
request. The registering functions take typed requests (:class:`Registration`,
:class:`Deregistration`), which ``paycore.api.requests`` reads from the wire; error texts
name fields as the wire does.
"""

from __future__ import annotations

import attrs

from ..config import Settings
from ..domain.fields import Address
from ..domain.records import Json, SessionKey
from ..domain.tokens import normalize_owner
from ..errors import AuthError, Conflict, Forbidden, InvalidInput, NotFound
from ..storage import Storage
from .session import REVOKED, is_active, is_revoked
from .signatures import parse_public_key, public_key_text, public_key_to_address
from .wallet import deregister_pubkey_message, verify_wallet_signature


@attrs.frozen
class Registration:
    """POST /auth/register-pubkey, its fields typed (``paycore.api.requests`` reads it)."""

    owner_address: Address = attrs.field(metadata={"doc": "the merchant's wallet"})
    public_key: str = attrs.field(metadata={"doc": "uncompressed SEC1 secp256k1 key, 0x04..."})
    signature: str = attrs.field(
        metadata={"doc": "the owner's EIP-191 signature of publicKey exactly as sent"}
    )
    encryption_public_key: str | None = attrs.field(
        default=None, metadata={"doc": "secp256k1 key to encrypt answers to (eth-crypto)"}
    )


@attrs.frozen
class Deregistration:
    """POST /auth/deregister-pubkey: by the owner's signature, or by the key's own session."""

    public_key: str = attrs.field(metadata={"doc": "the session key to remove"})
    owner_address: Address | None = attrs.field(
        default=None, metadata={"doc": "the merchant's wallet"}
    )
    signature: str | None = attrs.field(
        default=None, metadata={"doc": "the owner's signature; not with session headers"}
    )


def register_pubkey(
    storage: Storage,
    settings: Settings,
    request: Registration,
    *,
    now: int,
    session: SessionKey | None = None,
) -> SessionKey:
    """POST /auth/register-pubkey: ``{ownerAddress, publicKey, signature[, encryptionPublicKey]}``.

    The owner signs the publicKey string exactly as sent (docs/interface.md). That signature covers
    nothing else and is the same bytes each time the owner makes it (deterministic ECDSA),
    so a second registration signed by the owner alone cannot be told from a replay of the
    first (docs/decisions.md, "Re-registration"). It therefore changes nothing: asking for
    what is stored answers the record as it is, a different ``encryptionPublicKey`` is
    refused, and an expired key is not revived. A refresh -- a new window, an encryption key
    set, swapped or removed -- needs ``session`` too: the request's session headers, signed
    by this same key over this body with a fresh nonce, which :func:`.session.authenticate`
    has verified (an expired key cannot sign, so it is never refreshed; a new key is). The
    nonce counter is kept, so a refresh can never reopen replays.

    Raises InvalidInput (malformed fields), AuthError (a signature, or a change without
    session headers), Forbidden (another owner's key, a deregistered or expired key, session
    headers of another key), Conflict (the owner's cap of active keys).
    """
    raw_key = request.public_key
    public_key = parse_public_key(raw_key)
    owner = verify_wallet_signature(raw_key, request.signature, request.owner_address)
    encryption_key = request.encryption_public_key
    if encryption_key is not None:
        encryption_key = public_key_text(parse_public_key(encryption_key, "encryptionPublicKey"))
    address = public_key_to_address(public_key)
    if session is not None and session.address != address:
        raise Forbidden("session headers may only refresh their own key")

    # Cap check and insert in one transaction: two racing registrations cannot both take
    # the last free slot.
    with storage.transaction() as tx:
        existing = tx.get_session_key(address)
        if existing is not None:
            if is_revoked(existing):
                # The owner's signature over a key is valid forever; honouring it again after
                # deregistration would let anyone who saw it revive a key that was dropped,
                # perhaps because it leaked. A fresh key costs the client nothing.
                raise Forbidden("this session key was deregistered; register a new key")
            if existing.owner != owner:
                # Bound for life: were an expired key free to move, anyone who saw its
                # public key (any signature reveals it) could claim it, and the old
                # client's next requests would then act for the new owner.
                raise Forbidden("this session key is registered to another owner")
            if session is None:
                return _unchanged(existing, encryption_key, now)
        others = [
            k for k in tx.session_keys_of(owner) if k.address != address and is_active(k, now)
        ]
        if len(others) >= settings.session_key_cap:
            raise Conflict()
        key = SessionKey(
            address=address,
            public_key=public_key_text(public_key),
            owner=owner,
            registered_at=now,
            expires_at=now + settings.session_key_ttl,
            last_seen_nonce=existing.last_seen_nonce if existing is not None else 0,
            encryption_public_key=encryption_key,
        )
        tx.put_session_key(key)
    return key


def _unchanged(existing: SessionKey, encryption_key: str | None, now: int) -> SessionKey:
    """A registration of a known key with the owner's signature alone: possibly a replay,
    so it may neither revive, extend nor re-key; one asking for the stored state is a
    harmless repeat and gets the record as it stands."""
    if not is_active(existing, now):
        raise Forbidden(
            "this session key expired; register a new key (a refresh must be signed by "
            "the key itself before it expires)"
        )
    if existing.encryption_public_key != encryption_key:
        raise AuthError(
            "changing encryptionPublicKey of a registered key needs session headers "
            "signed by that key"
        )
    return existing


def deregister_pubkey(
    storage: Storage,
    request: Deregistration,
    *,
    now: int,
    session: SessionKey | None = None,
) -> SessionKey:
    """POST /auth/deregister-pubkey: by the owner's signature, or by the key itself.

    ``session`` is what :func:`.session.authenticate` returned for this request (``None``
    without session headers). With a session, the body's publicKey must be that same key;
    it is required, not defaulted, because a session signature does not name the endpoint:
    a body that means "delete my key" must never be one signed for another call (every poll
    signs an empty body). Without a session, the body is ``{ownerAddress, publicKey,
    signature}`` signed over ``deregister-pubkey:{publicKeyLower}``. Returns the key as it
    was before removal. Raises InvalidInput, AuthError, Forbidden, NotFound.
    """
    if session is not None:
        # Nothing but the key (and the owner, as a check): a registration body, which the
        # same key signs to refresh itself, must not work here as well.
        if request.signature is not None:
            raise InvalidInput("signature", "not a field of a session-signed deregistration")
        public_key = parse_public_key(request.public_key)
        if public_key_text(public_key) != session.public_key:
            raise Forbidden("session headers may only deregister their own key")
        claimed = request.owner_address
        if claimed is not None and normalize_owner(claimed) != session.owner:
            raise Forbidden("ownerAddress does not match the session key's owner")
        owner = session.owner
    else:
        raw_key = request.public_key
        public_key = parse_public_key(raw_key)
        owner = verify_wallet_signature(
            deregister_pubkey_message(raw_key), request.signature, request.owner_address
        )
    address = public_key_to_address(public_key)
    with storage.transaction() as tx:
        key = tx.get_session_key(address)
        if key is None or key.owner != owner or is_revoked(key):
            raise NotFound("session key not found")
        # Kept as a tombstone so the nonce counter outlives the registration (see REVOKED).
        tx.put_session_key(attrs.evolve(key, expires_at=REVOKED))
    return key


@attrs.frozen
class OwnerKeys:
    """An owner's session keys as GET /auth/pubkeys reports them."""

    owner: str
    keys: tuple[SessionKey, ...]

    def to_wire(self) -> Json:
        return {"ownerAddress": self.owner, "pubkeys": [k.to_wire() for k in self.keys]}


def list_pubkeys(
    storage: Storage, owner: object, *, session: SessionKey | None = None
) -> OwnerKeys:
    """GET /auth/pubkeys: the owner's keys, expired ones included so a client sees what to
    refresh; deregistered ones are gone. A session (when the request had one) must be the
    owner's own. Raises InvalidInput, Forbidden."""
    if owner is None:
        raise InvalidInput("owner", "required")
    normalized = normalize_owner(owner, "owner")
    if session is not None and session.owner != normalized:
        raise Forbidden("owner does not match the session key's owner")
    with storage.transaction() as tx:
        keys = tx.session_keys_of(normalized)
    return OwnerKeys(normalized, tuple(k for k in keys if not is_revoked(k)))


def registration_wire(key: SessionKey) -> Json:
    """Response of POST /auth/register-pubkey."""
    return {
        "registered": True,
        "ownerAddress": key.owner,
        "publicKey": key.public_key,
        "expiresAt": key.expires_at,
    }


def deregistration_wire(key: SessionKey) -> Json:
    """Response of POST /auth/deregister-pubkey (docs/interface.md)."""
    return {"deregistered": True, "ownerAddress": key.owner, "publicKey": key.public_key}
