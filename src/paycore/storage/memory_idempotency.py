"""The memory store's idempotency keys (``paycore.storage.idempotency``), mixed into its
transaction class. The store runs one transaction at a time under its lock, so a claim and
the answer stored after it are never seen half-done by another transaction."""

from __future__ import annotations

from typing import Any

import attrs

from .idempotency import IdempotentAnswer

#: (scope, route, key): one stored answer.
IdemKey = tuple[str, str, str]


class MemoryIdempotency:
    """``claim_idempotency_key``, ``store_idempotent_answer`` and ``prune_idempotency_keys``
    over the store's ``idempotency`` table (a dict in the tables' snapshot, so a rollback
    takes a claim back with the rest)."""

    @property
    def _t(self) -> Any:
        raise NotImplementedError

    def claim_idempotency_key(
        self, scope: str, route: str, key: str, fingerprint: str, *, now: int, expires_before: int
    ) -> IdempotentAnswer | None:
        table: dict[IdemKey, IdempotentAnswer] = self._t.idempotency
        found = table.get((scope, route, key))
        if found is not None and found.created_at >= expires_before:
            return found
        table[(scope, route, key)] = IdempotentAnswer(fingerprint, now)
        return None

    def store_idempotent_answer(
        self, scope: str, route: str, key: str, *, status: int, content_type: str, body: bytes
    ) -> None:
        table: dict[IdemKey, IdempotentAnswer] = self._t.idempotency
        claimed = table[(scope, route, key)]
        table[(scope, route, key)] = attrs.evolve(
            claimed, status=status, content_type=content_type, body=body
        )

    def prune_idempotency_keys(self, created_before: int, limit: int) -> int:
        table: dict[IdemKey, IdempotentAnswer] = self._t.idempotency
        doomed = [k for k, answer in table.items() if answer.created_at < created_before][:limit]
        for key in doomed:
            del table[key]
        return len(doomed)
