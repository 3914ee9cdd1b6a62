"""The memory store's session keys, nonces, challenges, signatures and poll tokens
(``paycore.storage.protocols.auth``), mixed into its transaction class. The nonce windows are
changed in place (a copy per request would cost what a window holds), so each change records
its undo for a rollback.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable

import attrs

from ..domain.records import PollToken, PowChallenge, SessionKey
from .memory_rows import MemoryTxBase, _NonceWindow


def _drop(by_nonce: dict[int, set[str]], nonce: int) -> None:
    by_nonce.pop(nonce, None)


def _forget(used: _NonceWindow, nonce: int) -> Callable[[], None]:
    """Drop the messages at ``nonce`` (already popped from the heap); returns the undo."""
    dropped = used.by_nonce.pop(nonce, None)

    def undo() -> None:
        if dropped is not None:
            used.by_nonce[nonce] = dropped
        heapq.heappush(used.heap, nonce)

    return undo


class MemoryAuth(MemoryTxBase):
    """The authentication methods over the store's ``session_keys``, ``used_nonces``,
    ``challenges``, ``signatures`` and ``poll_tokens`` tables."""

    def get_session_key(self, address: str) -> SessionKey | None:
        return self._t.session_keys.get(address)

    def session_keys_of(self, owner: str) -> list[SessionKey]:
        keys = [k for k in self._t.session_keys.values() if k.owner == owner]
        keys.sort(key=lambda k: (k.registered_at, k.address))
        return keys

    def put_session_key(self, key: SessionKey) -> None:
        stored = self._t.session_keys.get(key.address)
        if stored is not None:
            key = attrs.evolve(
                key,
                last_seen_nonce=max(key.last_seen_nonce, stored.last_seen_nonce),
                expires_at=0 if stored.expires_at == 0 else key.expires_at,
            )
        self._t.session_keys[key.address] = key

    def delete_session_key(self, address: str) -> bool:
        self._t.used_nonces.pop(address, None)
        return self._t.session_keys.pop(address, None) is not None

    def advance_nonce(self, address: str, nonce: int) -> bool:
        key = self._t.session_keys.get(address)
        if key is None or key.last_seen_nonce >= nonce:
            return False
        self._t.session_keys[address] = attrs.evolve(key, last_seen_nonce=nonce)
        return True

    def accept_nonce(
        self, address: str, nonce: int, digest: str, *, window: int, strict: bool = False
    ) -> bool:
        key = self._t.session_keys.get(address)
        if key is None:
            return False
        highest = key.last_seen_nonce
        if nonce <= highest - window or (strict and nonce <= highest):
            return False
        used = self._t.used_nonces.get(address)
        if used is not None and nonce <= used.floor:
            return False
        if used is None:  # a new entry: the snapshot's restore drops it on rollback
            used = self._t.used_nonces[address] = _NonceWindow()
        if strict:  # above the highest: new by that alone, so a floor instead of a record
            floor = used.floor
            used.floor = nonce
            self._undo.append(lambda: setattr(used, "floor", floor))
            self._t.session_keys[address] = attrs.evolve(key, last_seen_nonce=nonce)
            return True
        digests = used.by_nonce.get(nonce)
        if digests is not None and digest in digests:
            return False
        if digests is None:
            digests = used.by_nonce[nonce] = set()
            heapq.heappush(used.heap, nonce)
            # Undone, the heap entry stays behind and is dropped when the window passes it.
            self._undo.append(lambda: _drop(used.by_nonce, nonce))
        digests.add(digest)
        self._undo.append(lambda: digests.discard(digest))
        highest = max(highest, nonce)
        while used.heap and used.heap[0] <= highest - window:
            self._undo.append(_forget(used, heapq.heappop(used.heap)))
        self._t.session_keys[address] = attrs.evolve(key, last_seen_nonce=highest)
        return True

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
        key = self._t.session_keys.get(address)
        if key is None or not now < key.expires_at:
            return None
        if not self.accept_nonce(address, nonce, digest, window=window, strict=strict):
            return None
        return self._t.session_keys[address]

    def put_challenge(self, challenge: PowChallenge) -> None:
        self._t.challenges[challenge.challenge] = challenge

    def take_challenge(self, challenge: str) -> PowChallenge | None:
        return self._t.challenges.pop(challenge, None)

    def remember_signature(self, digest: str, expires_at: int, *, now: int | None = None) -> bool:
        known_until = self._t.signatures.get(digest)
        current = self._clock() if now is None else now
        if known_until is not None and known_until > current:
            return False
        self._t.signatures[digest] = expires_at
        return True

    def put_poll_token(self, token: PollToken) -> None:
        self._t.poll_tokens[token.token] = token

    def get_poll_token(self, token: str) -> PollToken | None:
        return self._t.poll_tokens.get(token)
