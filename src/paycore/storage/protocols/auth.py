"""The authentication part of the storage contract: session keys and their nonces, proof-of-work
challenges, salt-signed calls' signatures and legacy poll tokens.

Every one of them is a once-only duty that a replayed request relies on:

- ``advance_nonce`` is one compare-and-set: of N parallel calls with the same nonce, one wins.
- ``accept_nonce`` and ``spend_nonce`` record a (key, nonce, digest) once: of N parallel
  calls with the same triple, one wins, and the key's highest nonce only moves up.
- ``put_session_key`` never lowers a stored ``last_seen_nonce`` nor revives a deregistered key,
  however stale the record it writes.
- ``take_challenge`` and ``remember_signature`` succeed once per value.
"""

from __future__ import annotations

from typing import Protocol

from ...domain.records import PollToken, PowChallenge, SessionKey


class SessionKeys(Protocol):
    """``StorageTx``'s session-key methods: the keys an owner registered and the nonces they
    signed with, where replays are refused."""

    def get_session_key(self, address: str) -> SessionKey | None:
        """The session key whose Ethereum address is ``address`` (expired or deregistered
        ones included: their nonce counter must outlive them), or ``None``."""

    def session_keys_of(self, owner: str) -> list[SessionKey]:
        """All keys of ``owner`` (expired ones included), oldest registration first."""

    def put_session_key(self, key: SessionKey) -> None:
        """Insert, or replace the key with the same ``address`` -- except that a stored
        ``last_seen_nonce`` is never lowered and a deregistered key (``expires_at == 0``)
        stays deregistered, so a write based on a read that a concurrent request or
        deregistration has since overtaken cannot reopen replays or revive the key."""

    def delete_session_key(self, address: str) -> bool:
        """Remove the key with this ``address``; ``False`` if there was none."""

    def advance_nonce(self, address: str, nonce: int) -> bool:
        """Atomically set last_seen_nonce = nonce where last_seen_nonce < nonce."""

    def accept_nonce(
        self, address: str, nonce: int, digest: str, *, window: int, strict: bool = False
    ) -> bool:
        """Accept a signed message once: record (address, nonce, digest) as used and raise
        the key's ``last_seen_nonce`` to ``nonce`` if it is higher, atomically.

        Returns ``False`` and changes nothing when the key is unknown, the triple was
        already recorded, ``nonce <= last_seen_nonce - window``, or (``strict``)
        ``nonce <= last_seen_nonce``. Recorded triples at or below the new
        ``last_seen_nonce - window`` are forgotten, since that bound refuses them anyway;
        what stays is at most what the key signed within the window.

        A nonce accepted without a record must stay refused in either mode: a store that
        starts recording while keys already have nonces refuses every nonce at or below
        the ``last_seen_nonce`` of that moment, because nothing says which of them were
        used. Strict mode records nothing (a nonce above the highest is new by that
        alone; one row written per signed request) and so raises that floor to ``nonce``
        each time (``paycore_storage`` keeps it in ``nonce_floor``)."""

    def spend_nonce(
        self,
        address: str,
        nonce: int,
        digest: str,
        *,
        window: int,
        strict: bool = False,
        now: int,
    ) -> SessionKey | None:
        """What a signed request asks of storage, in one step: ``accept_nonce`` for a key
        that is active at ``now`` (``now < expires_at``, so never a deregistered one), and
        the key as it stands afterwards -- owner, encryption key, raised ``last_seen_nonce``.

        ``None`` when the key is unknown or not active, or ``accept_nonce`` would refuse;
        nothing the contract exposes has changed then, and the caller refuses the request
        (it may read the key to say why). The same atomicity as ``accept_nonce``: of N
        parallel calls with one triple, one gets the key. Stores make it as few statements
        as the database allows (``paycore_storage``: one on PostgreSQL), because every
        signed request pays for it."""


class Challenges(Protocol):
    """``StorageTx``'s proof-of-work challenges (POST /invoice/challenge): each taken once."""

    def put_challenge(self, challenge: PowChallenge) -> None:
        """Store a proof-of-work challenge issued by POST /invoice/challenge until it is
        taken or expires."""

    def take_challenge(self, challenge: str) -> PowChallenge | None:
        """Remove and return it; a second take of the same challenge returns ``None``."""


class Signatures(Protocol):
    """``StorageTx``'s salt-signed calls: each signature is accepted once until it expires."""

    def remember_signature(self, digest: str, expires_at: int, *, now: int | None = None) -> bool:
        """``True`` the first time ``digest`` is seen, ``False`` ever after (until expiry).

        ``now`` is the caller's clock, the one its ``expires_at`` was computed with; without
        it the storage's own clock decides whether a remembered signature has expired."""


class PollTokens(Protocol):
    """``StorageTx``'s legacy poll tokens (POST /poll/register)."""

    def put_poll_token(self, token: PollToken) -> None:
        """Store a legacy poll token (POST /poll/register) with the owner it drains for."""

    def get_poll_token(self, token: str) -> PollToken | None:
        """The legacy poll token with this text, or ``None``."""
