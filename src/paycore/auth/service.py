"""What the HTTP layer and the WebSocket endpoint ask of authentication, as two services.

``Gateway.sessions`` (session keys: register, deregister, list, authenticate a signed
request or a register frame, re-read a key) and ``Gateway.pow`` (proof-of-work challenges)
hold the gateway's storage privately, so no caller outside the gateway reaches storage. The
functions in ``registry``, ``session`` and ``pow`` stay the implementation, over a storage.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from ..config import Settings
from ..domain.reading import read
from ..domain.records import PowChallenge, SessionKey
from ..storage import Storage
from .pow import issue_challenge, verify_pow
from .registry import (
    Deregistration,
    OwnerKeys,
    Registration,
    deregister_pubkey,
    list_pubkeys,
    register_pubkey,
)
from .session import SignedRequest, signed_request, spend, verify_session

T = TypeVar("T")

#: A request whose signature was checked already (:meth:`Sessions.already_checked`): its
#: headers and body (those very objects), its target, and what the check proved.
_CHECKED: ContextVar[tuple[Mapping[str, str], bytes, str | bytes, SignedRequest] | None] = (
    ContextVar("paycore-checked-signature", default=None)
)


def _typed(cls: type[T], request: T | Mapping[str, Any]) -> T:
    """``request``, or its JSON fields read by the typed request layer (a host app may call
    the service with the body it has)."""
    if isinstance(request, Mapping):
        return read(cls, request)
    return request


class Sessions:
    """Session keys of owners: ``Gateway.sessions``."""

    def __init__(self, storage: Storage, settings: Settings, now: Callable[[], int]) -> None:
        self._storage = storage
        self._settings = settings
        self._now = now

    def register(
        self, request: Registration | Mapping[str, Any], *, session: SessionKey | None
    ) -> SessionKey:
        """POST /auth/register-pubkey (``paycore.auth.registry.register_pubkey``); the body's
        JSON fields are read as the endpoint reads them."""
        request = _typed(Registration, request)
        return register_pubkey(
            self._storage, self._settings, request, now=self._now(), session=session
        )

    def deregister(
        self, request: Deregistration | Mapping[str, Any], *, session: SessionKey | None
    ) -> SessionKey:
        """POST /auth/deregister-pubkey (``paycore.auth.registry.deregister_pubkey``)."""
        request = _typed(Deregistration, request)
        return deregister_pubkey(self._storage, request, now=self._now(), session=session)

    def list(self, owner: object, *, session: SessionKey | None) -> OwnerKeys:
        """GET /pubkeys: ``owner``'s keys (``paycore.auth.registry.list_pubkeys``)."""
        return list_pubkeys(self._storage, owner, session=session)

    def authenticate(
        self,
        *,
        method: str,
        uri: str | bytes,
        body: bytes,
        headers: Mapping[str, str],
        required: bool | None = None,
    ) -> SessionKey | None:
        """The key that signed this request, its nonce spent (``paycore.auth.session``):
        :meth:`check`, then :meth:`spend` when it is signed."""
        signed = self.check(method=method, uri=uri, body=body, headers=headers, required=required)
        return None if signed is None else self.spend(signed)

    def check(
        self,
        *,
        method: str,
        uri: str | bytes,
        body: bytes,
        headers: Mapping[str, str],
        required: bool | None = None,
    ) -> SignedRequest | None:
        """:meth:`authenticate`'s first half, which reads and writes nothing (the key
        recovered from the signature): what a request worth one transaction does before
        opening it (``paycore.auth.session.signed_request``). Inside
        :meth:`already_checked` for this very request, what that check proved."""
        checked = _CHECKED.get()
        if checked is not None:
            seen_headers, seen_body, seen_uri, proved = checked
            if seen_headers is headers and seen_body is body and seen_uri == uri:
                return proved
        return signed_request(
            self._settings, method=method, uri=uri, body=body, headers=headers,
            now=self._now(), required=required,
        )  # fmt: skip

    @contextmanager
    def already_checked(
        self, headers: Mapping[str, str], body: bytes, uri: str | bytes, signed: SignedRequest
    ) -> Iterator[None]:
        """Inside, :meth:`check` of the request with these ``headers`` and ``body`` (those
        very objects, whose bytes ``signed`` was checked against: a request answered on an
        event loop is checked before its storage is awaited) and ``uri`` returns ``signed``
        instead of checking again: the dispatcher's second check cost a second hash of the
        body and address, and a cache lookup for the key."""
        token = _CHECKED.set((headers, body, uri, signed))
        try:
            yield
        finally:
            _CHECKED.reset(token)

    def spend(self, signed: SignedRequest) -> SessionKey:
        """:meth:`authenticate`'s second half: the nonce spent, the key returned
        (``paycore.auth.session.spend``); in the request's transaction when one is open."""
        return spend(self._storage, self._settings, signed)

    def verify(
        self, *, nonce: str, signature: str, payload: bytes, public_key: str | None = None
    ) -> SessionKey:
        """A signature over ``payload`` by a registered key, its nonce spent (a /ws
        register frame)."""
        return verify_session(
            self._storage,
            self._settings,
            nonce=nonce,
            signature=signature,
            payload=payload,
            now=self._now(),
            public_key=public_key,
        )

    def current(self, address: str) -> SessionKey | None:
        """The stored key at ``address`` as it is now (revoked keys included), or None."""
        with self._storage.transaction() as tx:
            return tx.get_session_key(address)


class ProofOfWork:
    """Proof-of-work challenges for POST /invoice: ``Gateway.pow``."""

    def __init__(self, storage: Storage, settings: Settings, now: Callable[[], int]) -> None:
        self._storage = storage
        self._settings = settings
        self._now = now

    def issue(self, address: object) -> PowChallenge:
        """POST /invoiceChallenge (``paycore.auth.pow.issue_challenge``)."""
        return issue_challenge(self._storage, self._settings, address, now=self._now())

    def verify(self, *, challenge: object, nonce: object, address: str) -> None:
        """Spend ``challenge`` solved by ``nonce`` for ``address``; raises if it is not."""
        verify_pow(
            self._storage, challenge=challenge, nonce=nonce, address=address, now=self._now()
        )
