"""``spend_nonce_then_insert_invoice``: a signed ``POST /invoice``'s writes in one statement.

A creation in its request's transaction (``paycore.storage.request_unit``) costs five round
trips on PostgreSQL -- ``BEGIN``, the nonce's spend, the invoice's ``INSERT``, the owner's
count, ``COMMIT`` -- and psycopg's Python around each of them, about as much CPU as the rest
of the request. Here they are one autocommitted statement: the spend's data-modifying CTEs
(``auth._spend_sql``), then the invoice's ``INSERT .. SELECT`` from the key the spend
returned, then the count's upsert from the invoice's ``RETURNING``. PostgreSQL commits it
whole or not at all: a refused nonce returns no key, so nothing is inserted or counted.

The caller has run the core's rules on the key it expected (``RequestUnits.recording``):
the invoice's owner and the answer's encryption come from that key. The spend is guarded
on both (the stored key's ``owner`` and ``encryption_public_key`` equal the expected ones),
so a key changed since it was last seen is refused like a replay, with nothing written, and
the caller answers the request the ordinary way, where the nonce is still unspent.

A statement that fails (a guid taken, which the invoice's random guid makes a one in 2^122
event) is rolled back whole by the server, so it too leaves nothing behind.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy import Dialect, bindparam, insert, select, table

from paycore.domain.records import Invoice, SessionKey

from .auth import _KEY_NAMES, _SPEND_GUARDED
from .invoices import _INVOICE_COLUMNS
from .prepared import Prepared, on_dbapi
from .rows import invoice_row
from .statements import INVOICES, stripe_of
from .tables import invoices, owner_counts


def _insert_from_spent(_dialect: Dialect) -> Any:
    """The invoice's ``INSERT .. SELECT`` from the CTE ``spent`` (one row when the nonce
    was spent, none otherwise), its values bound by prefixed names: the spend binds an
    ``address`` and a ``nonce`` of its own."""
    values = select(
        *[bindparam(f"i_{column.name}", type_=column.type) for column in _INVOICE_COLUMNS]
    ).select_from(table("spent"))
    names = [column.name for column in _INVOICE_COLUMNS]
    return insert(invoices).from_select(names, values).returning(invoices.c.owner)


_INSERT = Prepared(_insert_from_spent)


class _Statement:
    """The statement for one nonce mode on PostgreSQL, with its binds' conversions."""

    def __init__(self, dialect: Dialect, strict: bool) -> None:
        found = re.fullmatch(r"(.*\))\s*SELECT\s+(.*)", _SPEND_GUARDED[strict].strip(), re.S)
        assert found is not None
        head, last = found.groups()
        compiled = _INSERT.compiled(dialect)
        counts = owner_counts.name
        self.sql = (
            f"{head.rstrip()}, spent AS (SELECT {last}),\n"
            f"created AS ({compiled.sql}),\n"
            f"counted AS (INSERT INTO {counts} (owner, kind, chain_id, stripe, n)\n"
            "  SELECT owner, %(c_kind)s, %(c_chain_id)s, %(c_stripe)s, 1 FROM created\n"
            "  ON CONFLICT (owner, kind, chain_id, stripe)\n"
            f"  DO UPDATE SET n = {counts}.n + excluded.n)\n"
            f"SELECT {', '.join(_KEY_NAMES)} FROM spent"
        )
        self.arguments = compiled.arguments


_STATEMENTS: dict[bool, _Statement] = {}
_LOCK = threading.Lock()


def _statement(dialect: Dialect, strict: bool) -> _Statement:
    found = _STATEMENTS.get(strict)
    if found is None:
        with _LOCK:
            found = _STATEMENTS.setdefault(strict, _Statement(dialect, strict))
    return found


def create_arguments(
    dialect: Dialect, strict: bool, spend: dict[str, Any], expect: SessionKey, invoice: Invoice
) -> tuple[str, dict[str, Any]]:
    """The statement for ``strict`` and its arguments: the spend's, the expected key's
    guard, the invoice's row (through its columns' conversions) and its count's slot."""
    row = invoice_row(invoice)
    statement = _statement(dialect, strict)
    arguments = statement.arguments({f"i_{name}": value for name, value in row.items()})
    return statement.sql, {
        **spend,
        **arguments,
        "key_owner": expect.owner,
        "key_encryption": expect.encryption_public_key,
        "c_kind": INVOICES,
        "c_chain_id": invoice.chain_id,
        "c_stripe": stripe_of(invoice.guid),
    }


def _key_of(rows: list[Any]) -> SessionKey | None:
    return SessionKey(*rows[0]) if rows else None


def spend_then_create_on_postgres(
    dialect: Dialect,
    dbapi: Any,
    invalidate: Callable[[BaseException], None],
    sql: str,
    arguments: dict[str, Any],
) -> SessionKey | None:
    """The statement on a psycopg connection in autocommit (the caller's), on its thread:
    the spent key, or None with nothing written."""
    rows, _ = on_dbapi(dialect, dbapi, sql, arguments, invalidate)
    return _key_of(rows)


async def spend_then_create_on_postgres_async(
    cursor: Any, sql: str, arguments: dict[str, Any]
) -> SessionKey | None:
    """The statement on the cursor of a psycopg ``AsyncConnection`` in autocommit: the
    spent key, or None with nothing written. Driver errors leave as the driver raised
    them."""
    await cursor.execute(sql, arguments)
    return _key_of(await cursor.fetchall())
