"""The webhook endpoint rows' statements (``paycore.storage``: webhook endpoints), mixed
into ``SqlTx``.

Kept apart from ``sql.py`` because endpoints touch no other table: ``put`` replaces one
row whole (an upsert on (owner, id)), ``delete`` removes one, reads are by owner. Which
endpoint a delivery goes to is a column of the delivery row, written by ``sql.py``'s
``enqueue_deliveries``; its claim reads the URL and secret from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, RowMapping, and_, delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from paycore.webhooks.records import WebhookEndpoint

from .tables import webhook_endpoints

#: Values bound in one ``IN (...)``, as in ``sql.py``: well below SQLite's host-parameter cap.
_IN_CHUNK = 500


def endpoint_row(endpoint: WebhookEndpoint) -> dict[str, Any]:
    return {
        "owner": endpoint.owner,
        "id": endpoint.id,
        "url": endpoint.url,
        "secret": endpoint.secret,
        "types": " ".join(sorted(endpoint.types)),
        "enabled": endpoint.enabled,
        "created_at": endpoint.created_at,
    }


def endpoint_from_row(row: RowMapping) -> WebhookEndpoint:
    return WebhookEndpoint(
        id=row["id"],
        owner=row["owner"],
        url=row["url"],
        secret=row["secret"],
        types=frozenset(row["types"].split()),
        enabled=bool(row["enabled"]),
        created_at=row["created_at"],
    )


class EndpointStatements:
    """``put_webhook_endpoint``, ``get_webhook_endpoint``, ``webhook_endpoints`` and
    ``delete_webhook_endpoint`` of ``StorageTx``, on the connection of the transaction."""

    @property
    def _c(self) -> Connection:
        raise NotImplementedError

    def put_webhook_endpoint(self, endpoint: WebhookEndpoint) -> None:
        insert_into = pg_insert if self._c.dialect.name == "postgresql" else sqlite_insert
        row = endpoint_row(endpoint)
        stmt = insert_into(webhook_endpoints).values(row)
        self._c.execute(
            stmt.on_conflict_do_update(
                index_elements=["owner", "id"],
                set_={k: stmt.excluded[k] for k in row if k not in ("owner", "id")},
            )
        )

    def get_webhook_endpoint(self, owner: str, endpoint_id: str) -> WebhookEndpoint | None:
        e = webhook_endpoints.c
        row = self._c.execute(
            select(webhook_endpoints).where(e.owner == owner, e.id == endpoint_id)
        ).first()
        return None if row is None else endpoint_from_row(row._mapping)

    def webhook_endpoints(self, owners: Sequence[str]) -> list[WebhookEndpoint]:
        wanted = sorted(set(owners))
        found: list[WebhookEndpoint] = []
        e = webhook_endpoints.c
        for start in range(0, len(wanted), _IN_CHUNK):
            query = (
                select(webhook_endpoints)
                .where(e.owner.in_(wanted[start : start + _IN_CHUNK]))
                .order_by(e.owner, e.id)
            )
            found += [endpoint_from_row(row._mapping) for row in self._c.execute(query)]
        return found

    def delete_webhook_endpoint(self, owner: str, endpoint_id: str) -> bool:
        e = webhook_endpoints.c
        done = self._c.execute(
            delete(webhook_endpoints).where(and_(e.owner == owner, e.id == endpoint_id))
        )
        return done.rowcount > 0
