"""Proof of work for invoice creation (docs/interface.md §POST /invoice/challenge).

A challenge is bound to the merchant address it was issued for, lives ``challenge_ttl``
seconds and is spent by the first creation that solves it, so one solution buys exactly one
invoice. A failed attempt spends nothing: its checks raise inside the storage transaction,
which rolls the take back.
"""

from __future__ import annotations

import itertools
import re
import secrets

from ..config import Settings
from ..crypto.hashing import sha256
from ..domain.records import PowChallenge
from ..domain.tokens import normalize_owner
from ..errors import Forbidden, InvalidInput
from ..storage import Storage

_NONCE_TEXT = re.compile(r"[0-9]{1,32}")


def leading_zero_bits(digest: bytes) -> int:
    return len(digest) * 8 - int.from_bytes(digest, "big").bit_length()


def pow_digest(challenge: str, nonce: int | str) -> bytes:
    return sha256(f"{challenge}:{nonce}".encode())


def meets_difficulty(challenge: str, nonce: int | str, difficulty: int) -> bool:
    return leading_zero_bits(pow_digest(challenge, nonce)) >= difficulty


def solve(challenge: str, difficulty: int) -> int:
    """The smallest nonce that solves ``challenge``: what a client (or a test) computes.

    Expected work is 2**difficulty hashes; keep test difficulties small.
    """
    for nonce in itertools.count():
        if meets_difficulty(challenge, nonce, difficulty):
            return nonce
    raise AssertionError("unreachable")  # pragma: no cover


def issue_challenge(
    storage: Storage, settings: Settings, address: object, *, now: int
) -> PowChallenge:
    """POST /invoice/challenge: a fresh random challenge for ``address``, stored until expiry
    when proof of work is on (``pow_difficulty`` > 0); with it off, answered and not stored.

    Raises InvalidInput when address is missing or not an address.
    """
    if address is None:
        raise InvalidInput("address", "required")
    challenge = PowChallenge(
        challenge=secrets.token_hex(16),
        address=normalize_owner(address, "address"),
        difficulty=settings.pow_difficulty,
        expires_at=now + settings.challenge_ttl,
    )
    if challenge.difficulty > 0:
        # Off, POST /invoice asks for no proof: a challenge nobody will spend is not stored,
        # or every call of this public endpoint would leave a row behind.
        with storage.transaction() as tx:
            tx.put_challenge(challenge)
    return challenge


def _nonce_text(nonce: object) -> str:
    """The nonce exactly as the client hashed it: a JSON number, or a string of digits."""
    if isinstance(nonce, int) and not isinstance(nonce, bool) and nonce >= 0:
        return str(nonce)
    if isinstance(nonce, str) and _NONCE_TEXT.fullmatch(nonce):
        return nonce
    raise InvalidInput("nonce", "must be a non-negative integer")


def verify_pow(
    storage: Storage, *, challenge: object, nonce: object, address: str, now: int
) -> None:
    """Spend ``challenge`` for ``address`` (the normalised owner creating the invoice).

    Raises InvalidInput when the challenge is missing, unknown, already used or expired, or
    the nonce does not reach its difficulty; Forbidden when it was issued for another
    address.
    """
    if challenge is None:
        raise InvalidInput("challenge", "required")
    if nonce is None:
        raise InvalidInput("nonce", "required")
    if not isinstance(challenge, str):
        raise InvalidInput("challenge", "must be a string")
    nonce_text = _nonce_text(nonce)
    with storage.transaction() as tx:
        issued = tx.take_challenge(challenge)
        if issued is None:
            raise InvalidInput("challenge", "unknown or already used")
        # An expired challenge is left taken (the block ends normally): nobody can use it.
        if now < issued.expires_at:
            if issued.address != address:
                raise Forbidden("the challenge was issued for another address")
            if not meets_difficulty(challenge, nonce_text, issued.difficulty):
                raise InvalidInput("nonce", f"does not give {issued.difficulty} leading zero bits")
    if now >= issued.expires_at:
        raise InvalidInput("challenge", "expired")
