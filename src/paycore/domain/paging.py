"""Keyset pages of GET /invoices and GET /transactions: positions, cursors and the page record.

An offset page costs the rows it skips; a keyset page starts from a position (the last row
the previous page showed) and costs only its own rows, however deep it is. The position of
an invoice is its guid (storage finds its creation sequence; the sequence itself, which
counts every merchant's invoices, is never shown); that of a transaction is its sort key,
every part of which its wire form already shows.

A cursor is that position, the direction to read from it and the offset the page it yields
will start at, as base64url JSON. Clients treat it as opaque; the server reads it strictly,
since it arrives in a query string like any other input: a cursor that is not one this
server could have issued for this list is a 400, never a 500.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Sequence
from typing import Any, Generic, Literal, TypeVar

import attrs

from ..errors import InvalidInput
from .records import Json, Transaction

#: Where a transaction sits in GET /transactions' newest-first order: (timestamp, tx_hash,
#: log_index, chain_id, token), compared as a tuple.
TxPosition = tuple[int, str, int, int, str]
Direction = Literal["older", "newer"]
Kind = Literal["invoices", "transactions"]

#: A cursor is a few dozen bytes; anything much longer is not one of ours.
MAX_CURSOR = 512
#: The cursors that ask for the first page (the newest rows) and the last one (the oldest),
#: each newest first like every page. Words, not an empty value: in a query an empty value
#: is a parameter not given (``paycore.api.wire``), which keeps the unpaged answer.
FIRST, LAST = "first", "last"

T = TypeVar("T")


def tx_position(tx: Transaction) -> TxPosition:
    return (tx.timestamp, tx.tx_hash, tx.log_index, tx.chain_id, tx.token)


@attrs.frozen
class Cursor:
    """Read ``direction`` of the row at ``position``; the page starts at ``offset``
    (``older``) or ends just before it (``newer``). ``position`` None: from the newest row
    (``older``) or the oldest (``newer``, the last page)."""

    kind: Kind
    direction: Direction
    position: str | TxPosition | None
    offset: int

    def encode(self) -> str:
        data = {"k": self.kind[0], "d": self.direction[0], "p": self.position, "o": self.offset}
        raw = json.dumps(data, separators=(",", ":"), ensure_ascii=True).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def read_cursor(text: str, kind: Kind) -> Cursor:
    """The cursor a client sent: ``first`` is the first page, ``last`` the last one."""
    if text == FIRST:
        return Cursor(kind, "older", None, 0)
    if text == LAST:
        return Cursor(kind, "newer", None, 0)
    try:
        if len(text) > MAX_CURSOR or not text.isascii():
            raise ValueError
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        data = json.loads(raw)
        return _checked(data, kind)
    except (ValueError, TypeError, KeyError, binascii.Error, RecursionError):
        raise InvalidInput("cursor", f"not a cursor of this {kind} list") from None


def _checked(data: Any, kind: Kind) -> Cursor:
    if not isinstance(data, dict) or set(data) != {"k", "d", "p", "o"} or data["k"] != kind[0]:
        raise ValueError
    directions: dict[str, Direction] = {"o": "older", "n": "newer"}
    direction = directions[data["d"]]
    offset = data["o"]
    if type(offset) is not int or not 0 <= offset < 2**53:
        raise ValueError
    position = data["p"]
    if kind == "invoices":
        if not isinstance(position, str) or not 0 < len(position) <= 64:
            raise ValueError
        return Cursor(kind, direction, position, offset)
    if not isinstance(position, list) or len(position) != 5:
        raise ValueError
    timestamp, tx_hash, log_index, chain_id, token = position
    ints = (timestamp, log_index, chain_id)
    if any(type(n) is not int or not 0 <= n < 2**63 for n in ints):
        raise ValueError
    if not all(isinstance(s, str) and 0 < len(s) <= 255 for s in (tx_hash, token)):
        raise ValueError
    return Cursor(kind, direction, (timestamp, tx_hash, log_index, chain_id, token), offset)


@attrs.frozen
class Page(Generic[T]):
    """One keyset page, newest first: ``offset`` is where it starts in the whole list (as
    counted when its cursor was issued), ``next_cursor`` reads the older rows after it and
    ``prev_cursor`` the newer rows before it; each is None at that end of the list."""

    items: list[T]
    total: int
    offset: int
    limit: int
    next_cursor: str | None
    prev_cursor: str | None

    def to_wire(self, item_wire: Callable[[T], Json]) -> Json:
        return {
            "items": [item_wire(item) for item in self.items],
            "total": self.total,
            "offset": self.offset,
            "limit": self.limit,
            "nextCursor": self.next_cursor,
            "prevCursor": self.prev_cursor,
        }


def page_from(
    cursor: Cursor,
    fetched: Sequence[T],
    *,
    limit: int,
    total: int,
    position: Callable[[T], str | TxPosition],
) -> Page[T]:
    """The page of ``fetched`` -- up to ``limit + 1`` rows read in the cursor's direction from
    its position (the extra row only says there is more) -- with cursors on to both sides."""
    more = len(fetched) > limit
    rows = list(fetched[:limit])
    if cursor.direction == "newer":
        rows.reverse()  # read oldest first from the position; shown newest first
        offset = total - len(rows) if cursor.position is None else cursor.offset - len(rows)
        older_exists = cursor.position is not None
        newer_exists = more
    else:
        offset = cursor.offset
        older_exists = more
        newer_exists = cursor.position is not None
    offset = max(offset, 0)

    def to(direction: Direction, row: T, at: int) -> str:
        return Cursor(cursor.kind, direction, position(row), at).encode()

    next_cursor = to("older", rows[-1], offset + len(rows)) if rows and older_exists else None
    prev_cursor = to("newer", rows[0], offset) if rows and newer_exists else None
    return Page(rows, total, offset, limit, next_cursor, prev_cursor)
