"""Session-signed requests (docs/interface.md §Authentication): who is calling, proven per request.

A request carries ``x-session-nonce`` and ``x-session-signature`` (and optionally
``x-session-pubkey``); the signature covers ``sess:{nonce}:{sha256hex}`` of the body, or of
the request URI for GET/HEAD so that a signed read cannot be replayed against another
resource. The caller is the owner the signing key was registered for. Nothing else of the
request is covered -- not the method, the path of a POST, its query string nor any other
header -- so :class:`paycore.api.http.Request` reads parameters from the covered bytes only.

Replays (docs/decisions.md, "Session nonces"): a nonce more than ``nonce_horizon_ms`` ahead of
the server's clock is refused before anything is stored, so no stray value can lock a key for
long. Then, in ``window`` mode, each signed message -- the pair (nonce, payload hash) -- is
accepted once, at any nonce above ``highest accepted - nonce_window``: concurrent requests of
one key, which reach the server in any order, all pass, and every replay fails. ``strict``
mode is the interface's rule, each nonce above the last accepted one. Both modes remember the
messages inside the window, so switching modes never reopens a replay.

Every failure is a 401 whose text starts with ``session signature:``, including malformed
headers: the headers were sent, and they do not authenticate anyone. Nothing here falls back
to "anonymous" once any session header is present, which is what soft-auth mode requires.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

import attrs

from ..config import Settings
from ..crypto.hashing import sha256
from ..domain.records import SessionKey
from ..errors import AuthError, InvalidInput
from ..storage import Storage
from .signatures import parse_public_key, public_key_to_address, recover

NONCE_HEADER = "x-session-nonce"
SIGNATURE_HEADER = "x-session-signature"
PUBKEY_HEADER = "x-session-pubkey"
#: The headers of a session-signed request (lower case); any one of them makes it one.
SESSION_HEADERS = _SESSION_HEADERS = (NONCE_HEADER, SIGNATURE_HEADER, PUBKEY_HEADER)

#: ``expires_at`` of a deregistered key. The record is kept, not deleted, so that its nonce
#: counter survives: deleting it would let old captured requests be replayed if the same key
#: were ever registered again.
REVOKED = 0

#: Reads whose signature covers the URI rather than the (empty) body.
URI_SIGNED_METHODS = frozenset({"GET", "HEAD"})

# Positive, no sign, no leading zero, at most 19 digits; the value bound is checked after.
_NONCE = re.compile(r"[1-9][0-9]{0,18}")
_MAX_NONCE = 2**63 - 1  # a signed 64-bit column holds every accepted nonce

_NOT_GREATER = "nonce is not greater than the last accepted one"
_REPLAYED = "this nonce was already accepted for this request (a replay)"


def is_revoked(key: SessionKey) -> bool:
    return key.expires_at == REVOKED


def is_active(key: SessionKey, now: int) -> bool:
    """Honoured at ``now``: registered, not deregistered, ``now`` before ``expires_at``."""
    return now < key.expires_at


def session_message(nonce: int | str, payload: bytes) -> str:
    """The text a client signs for a request whose hashed input is ``payload``."""
    return _signed_text(nonce, sha256(payload).hex())


def _signed_text(nonce: int | str, digest: str) -> str:
    return f"sess:{nonce}:{digest}"


def signed_payload(method: str, uri: str | bytes, body: bytes) -> bytes:
    """What the signature of this request hashes: the URI for reads, the body otherwise."""
    if method.upper() in URI_SIGNED_METHODS:
        return uri.encode("utf-8") if isinstance(uri, str) else uri
    return body


def _parse_nonce(text: str, *, now: int, horizon_ms: int) -> int:
    if _NONCE.fullmatch(text) is None or int(text) > _MAX_NONCE:
        raise AuthError(
            f"{NONCE_HEADER} must be a positive decimal integer below 2**63, "
            "without sign or leading zeros"
        )
    value = int(text)
    # ``now`` is unix seconds; a Date.now() client is within clock skew of now * 1000, and a
    # counter (1, 2, 3, ...) is far below it.
    if value > now * 1000 + horizon_ms:
        raise AuthError(
            f"{NONCE_HEADER} is more than {horizon_ms} ms ahead of the server clock "
            "(use a counter or Date.now() milliseconds)"
        )
    return value


def _session_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The session headers, matched case-insensitively; a repeated one is refused because
    two values leave open which of them was meant."""
    found: dict[str, str] = {}
    for name, value in headers.items():
        lowered = name.lower()
        if lowered in _SESSION_HEADERS:
            if lowered in found:
                raise AuthError(f"{lowered} sent more than once")
            found[lowered] = value
    return found


@attrs.frozen
class SignedRequest:
    """What a request's session signature proves before storage is asked: the address of
    the key that signed, the nonce and the digest of what was signed, checked against the
    server's clock ``at``. Worked out outside any transaction: recovering the key is a
    signed request's costliest CPU, and inside the request's transaction it would hold
    SQLite's one writer lock (a PostgreSQL key row) while it ran, so that concurrent
    writers queued behind arithmetic."""

    address: str
    nonce: int
    digest: str
    at: int


def check_signature(
    settings: Settings,
    *,
    nonce: str,
    signature: str,
    payload: bytes,
    now: int,
    public_key: str | None = None,
) -> SignedRequest:
    """The first half of :func:`verify_session`, which reads and writes nothing: the nonce
    within the horizon, the key recovered from the signature (and equal to a claimed
    ``x-session-pubkey``). Raises AuthError; :func:`spend` is the second half."""
    nonce_value = _parse_nonce(nonce, now=now, horizon_ms=settings.nonce_horizon_ms)
    digest = sha256(payload).hex()
    text = _signed_text(nonce, digest)
    # A signature a JSON frame carried may be any value: only text is worth keeping.
    signer = _recovered(text, signature) if isinstance(signature, str) else recover(text, signature)
    if public_key is not None:
        try:
            claimed = parse_public_key(public_key, PUBKEY_HEADER)
        except InvalidInput as exc:
            raise AuthError(f"{PUBKEY_HEADER}: {exc.reason}") from None
        if claimed != signer:
            raise AuthError(f"{PUBKEY_HEADER} does not match the signing key")
    return SignedRequest(public_key_to_address(signer), nonce_value, digest, now)


@lru_cache(maxsize=1024)
def _recovered(text: str, signature: str) -> bytes:
    """The key behind ``signature`` over ``text``, for the last distinct ones: a signed read
    answered on an event loop checks its signature before its spend is awaited
    (``paycore.api.handle_inline_async``), and the dispatcher checks it again after; the
    second recovery, a signed request's costliest CPU, is this lookup. A pure function of
    its arguments, so a hit tells nothing a recovery would not; a refusal is not kept."""
    return recover(text, signature)


def nonce_terms(settings: Settings) -> tuple[bool, int]:
    """Whether nonces are strictly increasing, and the window of the other mode: what
    every spend of a nonce is given (here, and a signed read's spend awaited on a loop)."""
    return settings.nonce_mode == "strict", settings.nonce_window


def spend(storage: Storage, settings: Settings, signed: SignedRequest) -> SessionKey:
    """The second half of :func:`verify_session`: the key is active and the message new,
    decided and recorded by one storage call; the key with its highest accepted nonce.
    Raises AuthError, having stored nothing."""
    strict, window = nonce_terms(settings)
    # One storage call decides, atomically (one statement on PostgreSQL): the key is active,
    # the message is new within the window, and the key comes back with it. Inside a
    # request's one transaction (``paycore.storage.request_unit``) it joins that
    # transaction; alone, it is a unit of work of its own.
    key = storage.spend_nonce(
        signed.address, signed.nonce, signed.digest, window=window, strict=strict, now=signed.at
    )
    if key is None:
        with storage.transaction() as tx:
            stored = tx.get_session_key(signed.address)
        raise AuthError(_refusal(stored, signed.nonce, strict, window, signed.at))
    return key


def verify_session(
    storage: Storage,
    settings: Settings,
    *,
    nonce: str,
    signature: str,
    payload: bytes,
    now: int,
    public_key: str | None = None,
) -> SessionKey:
    """Verify one session signature over ``payload`` and consume its nonce.

    The transport-neutral core of :func:`authenticate`, also used by the WebSocket register
    frame (whose payload is the server's challenge). Returns the key with its highest
    accepted nonce; raises AuthError for every failure, having stored nothing.
    """
    signed = check_signature(
        settings, nonce=nonce, signature=signature, payload=payload, now=now,
        public_key=public_key,
    )  # fmt: skip
    return spend(storage, settings, signed)


def _refusal(key: SessionKey | None, nonce: int, strict: bool, window: int, now: int) -> str:
    """Why ``spend_nonce`` refused, in the client's words: read only on a refusal, so an
    accepted request costs no second statement. A concurrent request may have moved the
    key since; the text then names what the key shows now, which is still a refusal."""
    if key is None or is_revoked(key):
        return "unknown session key"
    if not is_active(key, now):
        return "session key expired"
    if strict:  # only a nonce above the highest passes, so that is every refusal's reason
        return _NOT_GREATER
    if nonce <= key.last_seen_nonce - window:
        return f"nonce is more than {window} below the highest accepted one"
    return _REPLAYED


def authenticate(
    storage: Storage,
    settings: Settings,
    *,
    method: str,
    uri: str | bytes,
    body: bytes,
    headers: Mapping[str, str],
    now: int,
    required: bool | None = None,
) -> SessionKey | None:
    """The session key behind a request, or ``None`` for a request without session headers.

    :func:`signed_request`, then :func:`spend` when the request is signed. Raises AuthError
    when headers are required and absent, and whenever any is present but does not verify.
    """
    signed = signed_request(
        settings, method=method, uri=uri, body=body, headers=headers, now=now,
        required=required,
    )  # fmt: skip
    return None if signed is None else spend(storage, settings, signed)


def signed_request(
    settings: Settings,
    *,
    method: str,
    uri: str | bytes,
    body: bytes,
    headers: Mapping[str, str],
    now: int,
    required: bool | None = None,
) -> SignedRequest | None:
    """What the request's session headers prove (:func:`check_signature`), or ``None`` for
    a request without them; nothing is read or stored.

    ``uri`` is the request target exactly as sent (path and query string, undecoded), since
    that is the text a client hashes for a read. ``required``: ``True`` for calls that always
    need a session, ``False`` for public reads that take one optionally, ``None`` (owner-scoped
    calls) to follow ``settings.auth_mode``: required when strict, optional when soft.
    Raises AuthError when headers are required and absent, and whenever any is present but
    does not verify.
    """
    found = _session_headers(headers)
    if required is None:
        required = settings.auth_mode == "strict"
    if not found:
        if required:
            raise AuthError(f"missing {NONCE_HEADER} and {SIGNATURE_HEADER} headers")
        return None
    nonce = found.get(NONCE_HEADER)
    signature = found.get(SIGNATURE_HEADER)
    if nonce is None or signature is None:
        raise AuthError(f"{NONCE_HEADER} and {SIGNATURE_HEADER} must be sent together")
    return check_signature(
        settings,
        nonce=nonce,
        signature=signature,
        payload=signed_payload(method, uri, body),
        now=now,
        public_key=found.get(PUBKEY_HEADER),
    )
