"""The idempotency keys' part of the storage contract: the first answer to a creating write,
kept so that a client's retry gets it again instead of a second invoice or refund.

A client that timed out on ``POST /invoice`` cannot know whether the invoice was made. With an
``Idempotency-Key`` header it sends the request again (signed anew) and is answered from
here; docs/decisions.md, "Idempotency keys", has the rules. What storage owes for it:

- ``claim_idempotency_key`` and ``store_idempotent_answer`` run in the same transaction as
  the write they guard, so the answer is stored exactly when the write commits: a key is
  never stored for a write that rolled back, nor a write committed without its key.
- Of concurrent transactions claiming one key, one claims it; the others wait for it to end
  (PostgreSQL: the unique index's insert lock; SQLite and memory run transactions one at a
  time) and then see its answer, or claim the key themselves if it rolled back.
- A key older than ``expires_before`` is as good as absent: claiming it replaces it.
"""

from __future__ import annotations

from typing import Protocol

import attrs


@attrs.frozen
class IdempotentAnswer:
    """One stored answer. ``fingerprint`` is the digest of the request it answered (method,
    path and the signed parameters), so a different request under the same key is told
    apart; ``status`` is 0 while the claiming transaction has not stored its answer."""

    fingerprint: str
    created_at: int
    status: int = 0
    content_type: str = ""
    body: bytes = b""


class IdempotencyKeys(Protocol):
    """``StorageTx``'s idempotency-key methods. ``scope`` is who the key belongs to (the
    owner, so two merchants' keys never meet), ``route`` the endpoint's stable name."""

    def claim_idempotency_key(
        self, scope: str, route: str, key: str, fingerprint: str, *, now: int, expires_before: int
    ) -> IdempotentAnswer | None:
        """Claim ``key`` for this transaction and return ``None``; or, when the key is
        stored already (and not older than ``expires_before``), return what is stored and
        change nothing. A claimed key whose transaction rolls back is gone with it."""

    def store_idempotent_answer(
        self, scope: str, route: str, key: str, *, status: int, content_type: str, body: bytes
    ) -> None:
        """Keep the answer of the request that claimed ``key`` in this transaction."""

    def prune_idempotency_keys(self, created_before: int, limit: int) -> int:
        """Delete up to ``limit`` keys created before ``created_before``; returns how many."""
