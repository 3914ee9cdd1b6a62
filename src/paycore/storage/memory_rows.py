"""The in-memory store's rows and shared helpers: the records its tables hold besides the
contract's own, the copies that keep a caller's mutable data out of storage, and the base of
its transaction's mixins (``memory_<concern>.py``, one per protocol module of
``paycore.storage.protocols``), which names the tables they work on.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from ..domain.records import Invoice
from ..links.records import PaymentLink
from ..webhooks.records import Delivery

TxKey = tuple[int, str, int, str]  # (chain_id, tx_hash, log_index, token): one transfer


@attrs.frozen
class _Queue:
    owner: str
    cursor: int  # id of the last event this consumer has been handed


@attrs.frozen
class _DeliveryRow:
    """A delivery as stored: the public record plus its lease."""

    delivery: Delivery
    lease_token: str | None = None
    lease_until: int | None = None


@attrs.frozen
class _LinkRow:
    """A payment link as stored: the record plus its rate window."""

    link: PaymentLink
    window_start: int = 0
    window_opens: int = 0


@attrs.define
class _NonceWindow:
    """One key's accepted messages: the payload digests per nonce, and a min-heap of those
    nonces, so that moving the window costs only what it forgets; and the floor strict mode
    raises, at or below which every nonce is refused."""

    by_nonce: dict[int, set[str]] = attrs.field(factory=dict)
    heap: list[int] = attrs.field(factory=list)
    floor: int = 0


def _detached(invoice: Invoice) -> Invoice:
    """A copy whose ``data`` dict is not shared with the caller's, without ``refunds``:
    those are rows of their own, as in a database (``StorageTx.insert_refund``)."""
    return attrs.evolve(
        invoice, data=copy.deepcopy(invoice.data), refunds=(), detected=(), change=None
    )


def _page(items: list[Any], offset: int, limit: int | None) -> list[Any]:
    return items[offset:] if limit is None else items[offset : offset + limit]


if TYPE_CHECKING:
    from .memory import _Tables


class MemoryTxBase:
    """What every mixin of the memory store's transaction works with: the live tables (only
    inside the transaction's block), the store's clock and the undo log of in-place changes.
    ``memory._MemoryTx`` provides them."""

    _clock: Callable[[], float]
    #: Reverses of the in-place changes the snapshot cannot put back, newest last.
    _undo: list[Callable[[], None]]

    @property
    def _t(self) -> _Tables:
        raise NotImplementedError
