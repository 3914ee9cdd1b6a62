"""Idempotency keys for creating writes (``Gateway.idempotency``): Stripe's rules.

A client that sends ``POST /invoice`` and times out does not know whether the invoice was
made. Sending the same request again with the same ``Idempotency-Key`` header answers it with
what the first one got, and makes nothing new; the same key with a different request is a
409. The key is stored with the answer in the transaction of the write itself
(``paycore.storage.idempotency``), so a restart, a second web process or twenty retries at
once see either no key (the write never committed) or the write and its answer together.

Only answers that committed are kept: a refused request rolls its claim back with it, so the
client may correct it and send it again under the same key.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import Conflict, InvalidInput
from ..storage import Storage
from ..storage.idempotency import IdempotentAnswer

#: How long a key's answer is kept and replayed (24 hours, as Stripe keeps them).
KEY_TTL = 24 * 60 * 60
#: A key is what a client generates (a UUID, say): printable ASCII, no spaces, 255 at most.
_KEY = re.compile(r"[\x21-\x7e]{1,255}")


class IdempotencyMismatch(Conflict):
    def __init__(self) -> None:
        super().__init__("idempotency-key: already used with a different request; use a new key")


class IdempotencyInProgress(Conflict):
    def __init__(self) -> None:
        super().__init__("idempotency-key: a request with this key is still being answered")
        self.headers = {"retry-after": "1"}


def check_key(key: str) -> str:
    if _KEY.fullmatch(key) is None:
        raise InvalidInput(
            "idempotency-key", "must be 1 to 255 printable ASCII characters without spaces"
        )
    return key


class Idempotency:
    """Claims and answers of idempotency keys, over the gateway's storage. Both calls must
    run inside the request's one transaction (``Gateway.one_transaction``), with the write
    they guard between them."""

    def __init__(self, storage: Storage, now: Callable[[], int]) -> None:
        self._storage = storage
        self._now = now

    def begin(self, scope: str, route: str, key: str, fingerprint: str) -> IdempotentAnswer | None:
        """``None``: the key is this request's, go on and make the write. Otherwise the
        answer stored for it, to send again; a different request under the key is a 409."""
        now = self._now()
        with self._storage.transaction() as tx:
            found = tx.claim_idempotency_key(
                scope, route, key, fingerprint, now=now, expires_before=now - KEY_TTL
            )
        if found is None:
            return None
        if found.fingerprint != fingerprint:
            raise IdempotencyMismatch()
        if not found.status:
            raise IdempotencyInProgress()
        return found

    def finish(
        self, scope: str, route: str, key: str, status: int, content_type: str, body: bytes
    ) -> None:
        with self._storage.transaction() as tx:
            tx.store_idempotent_answer(
                scope, route, key, status=status, content_type=content_type, body=body
            )
