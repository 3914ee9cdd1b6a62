"""The storage contract's one-statement invoice read (``read_invoice``), as tests.

Kept apart from ``storage_contract`` so a store that predates the method can adopt it on
its own; run it the same way, with the same ``storage`` fixture::

    from paycore.testing.storage_contract_reads import *  # noqa: F403
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from typing import Any, cast

import attrs
import pytest

from paycore.domain.records import Invoice, RefundStatus, SessionKey, Status
from paycore.storage import (
    AsyncInvoiceRead,
    AsyncSignedCreate,
    AsyncSignedRead,
    SignedCreate,
    SpendThenRead,
    Storage,
    spend_then_read_of,
)
from paycore.storage.invoice_read import InvoiceRead
from paycore.testing.storage_detected import detected
from paycore.testing.storage_records import OWNER, invoice, payment, refund, session_key

__all__ = [
    "test_read_invoice_of_an_unknown_guid_is_none",
    "test_read_invoice_reads_the_record_and_its_refunds",
    "test_read_invoice_version_is_stable_and_follows_every_change",
    "test_read_invoice_of_an_open_invoice_takes_each_refund_and_transfer_once",
    "test_spend_nonce_then_read_spends_then_reads_as_the_two_calls_do",
    "test_spend_nonce_then_read_refused_reads_nothing_and_changes_nothing",
    "test_read_invoice_async_reads_what_read_invoice_reads",
    "test_spend_nonce_then_read_async_does_what_the_sync_call_does",
    "test_spend_nonce_then_insert_invoice_async_writes_all_or_nothing",
    "test_spend_nonce_then_insert_invoice_writes_all_or_nothing",
]


def test_read_invoice_of_an_unknown_guid_is_none(storage: Storage) -> None:
    assert storage.read_invoice("00000000-0000-4000-8000-00000000dead") is None
    with storage.transaction() as tx:
        assert tx.read_invoice("00000000-0000-4000-8000-00000000dead") is None


def test_read_invoice_reads_the_record_and_its_refunds(storage: Storage) -> None:
    record = attrs.evolve(invoice(), payments=(payment(),), status=Status.PAID)
    with storage.transaction() as tx:
        tx.insert_invoice(record)
    read = storage.read_invoice(record.guid)
    assert read is not None
    assert (read.guid, read.status, read.deadline) == (record.guid, Status.PAID, record.deadline)
    assert read.invoice() == record
    first, second = refund(record.guid, 1), refund(record.guid, 2)
    with storage.transaction() as tx:
        tx.insert_refund(first)
        tx.insert_refund(second)
    read = storage.read_invoice(record.guid)
    assert read is not None
    assert read.invoice() == attrs.evolve(record, refunds=(first, second))
    with storage.transaction() as tx:
        inside = tx.read_invoice(record.guid)
        assert inside is not None
        assert inside.invoice() == read.invoice()
        assert inside.version == read.version


def test_read_invoice_version_is_stable_and_follows_every_change(storage: Storage) -> None:
    record = invoice()
    with storage.transaction() as tx:
        tx.insert_invoice(record)
    versions = []

    def version() -> str:
        read = storage.read_invoice(record.guid)
        assert read is not None
        return read.version

    versions.append(version())
    assert version() == versions[0]  # nothing changed: the same version
    changes = [
        attrs.evolve(record, status=Status.PARTIAL_PAID, payments=(payment(),)),
        attrs.evolve(record, status=Status.PARTIAL_PAID, payments=(payment(),), data={"a": 2}),
    ]
    for changed in changes:
        with storage.transaction() as tx:
            tx.update_invoice(changed)
        versions.append(version())
    with storage.transaction() as tx:
        tx.insert_refund(refund(record.guid, 1))
    versions.append(version())
    settled = attrs.evolve(
        refund(record.guid, 1), status=RefundStatus.CONFIRMED, tx_hash="0x" + "ab" * 32,
        log_index=3, settled_at=1_700_000_500,
    )  # fmt: skip
    with storage.transaction() as tx:
        assert tx.settle_refund(settled)
    versions.append(version())
    assert len(set(versions)) == len(versions), versions
    try:
        with storage.transaction() as tx:
            tx.update_invoice(attrs.evolve(record, status=Status.EXPIRED))
            raise RuntimeError("roll it back")
    except RuntimeError:
        pass
    assert version() == versions[-1]  # a rolled-back change changes nothing


def test_read_invoice_of_an_open_invoice_takes_each_refund_and_transfer_once(
    storage: Storage,
) -> None:
    """An open invoice with refunds and detected transfers at once: a store that reads
    them in one joined statement meets each refund once per detected transfer, and must
    still give each once, in order -- refunds by creation, transfers by block."""
    record = invoice(status=Status.PARTIAL_PAID)
    found = (
        detected(2, guid=record.guid, block=101),
        detected(1, guid=record.guid, block=102),
        detected(3, guid=record.guid, block=102, log_index=1),
    )
    with storage.transaction() as tx:
        tx.insert_invoice(record)
        tx.insert_refund(refund(record.guid, 1))
        tx.insert_refund(refund(record.guid, 2))
        tx.replace_detected(1, list(reversed(found)))
    read = storage.read_invoice(record.guid)
    assert read is not None and read.status == Status.PARTIAL_PAID
    assert read.detected == found
    assert read.invoice().refunds == (refund(record.guid, 1), refund(record.guid, 2))
    paid = attrs.evolve(record, status=Status.PAID)
    with storage.transaction() as tx:
        tx.update_invoice(paid)
    settled = storage.read_invoice(record.guid)
    assert settled is not None
    assert settled.detected == ()  # a settled invoice shows none
    assert settled.invoice().refunds == (refund(record.guid, 1), refund(record.guid, 2))


def _keyed(storage: Storage) -> tuple[SpendThenRead, str, int]:
    """The store's ``spend_nonce_then_read`` (optional: a store without it is skipped)
    and a registered key's address and a time it is active at."""
    found = spend_then_read_of(storage)
    if found is None:
        pytest.skip("this store has no spend_nonce_then_read (optional)")
    key = session_key()
    with storage.transaction() as tx:
        tx.put_session_key(key)
    return found, key.address, key.registered_at + 60


def _digest(label: str) -> str:
    return hashlib.sha256(label.encode()).hexdigest()


def test_spend_nonce_then_read_spends_then_reads_as_the_two_calls_do(storage: Storage) -> None:
    """The spend as ``spend_nonce`` makes it, then the read ``read_invoice`` gives -- the
    same version (a signed read's ``ETag`` is the public read's), refunds and detected
    transfers of an open invoice included; for an unknown guid the nonce is spent all
    the same and the read is None."""
    store, address, now = _keyed(storage)
    record = invoice(status=Status.PARTIAL_PAID)
    found = (
        detected(2, guid=record.guid, block=101),
        detected(1, guid=record.guid, block=102),
        detected(3, guid=record.guid, block=102, log_index=1),
    )
    with storage.transaction() as tx:
        tx.insert_invoice(record)
        tx.replace_detected(1, list(reversed(found)))
    key, read = store.spend_nonce_then_read(
        address, 5, _digest("a"), window=1000, now=now, guid=record.guid
    )
    assert key is not None and key.last_seen_nonce == 5
    alone = storage.read_invoice(record.guid)
    assert read is not None and alone is not None
    assert (read.version, read.status, read.detected) == (
        alone.version,
        alone.status,
        alone.detected,
    )
    assert read.invoice() == alone.invoice()
    with storage.transaction() as tx:
        tx.insert_refund(refund(record.guid, 1))
        tx.insert_refund(refund(record.guid, 2))
    key, read = store.spend_nonce_then_read(
        address, 6, _digest("a"), window=1000, strict=True, now=now, guid=record.guid
    )
    alone = storage.read_invoice(record.guid)
    assert key is not None and read is not None and alone is not None
    assert read.version == alone.version and read.invoice() == alone.invoice()
    assert read.invoice().refunds == (refund(record.guid, 1), refund(record.guid, 2))
    assert read.detected == found
    unknown = "00000000-0000-4000-8000-00000000dead"
    key, read = store.spend_nonce_then_read(
        address, 7, _digest("b"), window=1000, now=now, guid=unknown
    )
    assert key is not None and key.last_seen_nonce == 7 and read is None
    with storage.transaction() as tx:
        stored = tx.get_session_key(address)
    assert stored is not None and stored.last_seen_nonce == 7


def test_spend_nonce_then_read_refused_reads_nothing_and_changes_nothing(
    storage: Storage,
) -> None:
    """A replay, a nonce below strict mode's bound and an unknown key: ``(None, None)``,
    and the key stands as it was; the message then still spends nowhere else."""
    store, address, now = _keyed(storage)
    record = invoice()
    with storage.transaction() as tx:
        tx.insert_invoice(record)
    first = store.spend_nonce_then_read(
        address, 9, _digest("a"), window=1000, now=now, guid=record.guid
    )
    assert first[0] is not None and first[1] is not None
    for nonce, label, strict in ((9, "a", False), (8, "c", True)):
        assert store.spend_nonce_then_read(
            address, nonce, _digest(label), window=1000, strict=strict, now=now, guid=record.guid
        ) == (None, None)
    stranger = "0x0000000000000000000000000000000000000001"
    assert store.spend_nonce_then_read(
        stranger, 10, _digest("a"), window=1000, now=now, guid=record.guid
    ) == (None, None)
    with storage.transaction() as tx:
        stored = tx.get_session_key(address)
    assert stored is not None and stored.last_seen_nonce == 9
    assert storage.spend_nonce(address, 9, _digest("a"), window=1000, now=now) is None


def test_read_invoice_async_reads_what_read_invoice_reads(storage: Storage) -> None:
    """The optional async read (``AsyncInvoiceRead``; offered by the SQL store on both
    databases, ``has_async_read`` or not) returns what ``read_invoice`` does --
    the same version, status, deadline, detected transfers and invoice with its refunds
    -- for an open invoice, a paid one with refunds and an unknown guid, on one loop and
    on a second one (a connection belongs to its loop)."""
    if not callable(getattr(storage, "read_invoice_async", None)):
        pytest.skip("this store has no read_invoice_async (optional)")
    reader = cast(AsyncInvoiceRead, storage)
    record = invoice(status=Status.PARTIAL_PAID)
    paid = attrs.evolve(
        invoice("00000000-0000-4000-8000-000000000002", address="0x" + "22" * 20),
        payments=(payment(),),
        status=Status.PAID,
    )
    found = (detected(1, guid=record.guid, block=101), detected(2, guid=record.guid, block=102))
    with storage.transaction() as tx:
        tx.insert_invoice(record)
        tx.insert_invoice(paid)
        tx.replace_detected(1, list(found))
        tx.insert_refund(refund(paid.guid, 1))
        tx.insert_refund(refund(paid.guid, 2))
    unknown = "00000000-0000-4000-8000-00000000dead"
    # Idle at least once: a store may refuse (WouldBlock) where a read would wait for a
    # connection to open; after a sync read it must answer.
    assert storage.read_invoice(record.guid) is not None

    async def reads() -> list[InvoiceRead | None]:
        return [await reader.read_invoice_async(g) for g in (record.guid, paid.guid, unknown)]

    for _loop in range(2):
        awaited = asyncio.run(reads())
        assert awaited[2] is None
        for guid, read in zip((record.guid, paid.guid), awaited, strict=False):
            alone = storage.read_invoice(guid)
            assert read is not None and alone is not None
            assert (read.guid, read.version, read.status, read.deadline, read.detected) == (
                alone.guid,
                alone.version,
                alone.status,
                alone.deadline,
                alone.detected,
            )
            assert read.invoice() == alone.invoice()
    opened = awaited[0]
    assert opened is not None and opened.detected == found


def test_spend_nonce_then_read_async_does_what_the_sync_call_does(storage: Storage) -> None:
    """The optional async spend and read (``AsyncSignedRead``): the nonce spent and
    committed (the key comes back with it, and the stored key shows it), the read
    ``read_invoice`` gives, ``(key, None)`` for an unknown guid, and ``(None, None)`` with
    nothing changed for a replay -- on one loop and on a second one."""
    if not callable(getattr(storage, "spend_nonce_then_read_async", None)):
        pytest.skip("this store has no spend_nonce_then_read_async (optional)")
    spender = cast(AsyncSignedRead, storage)
    _store, address, now = _keyed(storage)
    record = invoice(status=Status.PARTIAL_PAID)
    with storage.transaction() as tx:
        tx.insert_invoice(record)
        tx.replace_detected(1, [detected(1, guid=record.guid, block=101)])
    unknown = "00000000-0000-4000-8000-00000000dead"
    assert storage.read_invoice(record.guid) is not None  # idle once, as above

    async def spends(first: int) -> list[tuple[SessionKey | None, InvoiceRead | None]]:
        made: list[tuple[SessionKey | None, InvoiceRead | None]] = []
        for nonce, guid, strict in ((first, record.guid, False), (first + 1, unknown, True)):
            made.append(
                await spender.spend_nonce_then_read_async(
                    address,
                    nonce,
                    _digest(str(nonce)),
                    window=1000,
                    strict=strict,
                    now=now,
                    guid=guid,
                )  # fmt: skip
            )
        made.append(  # the first again: a replay
            await spender.spend_nonce_then_read_async(
                address, first, _digest(str(first)), window=1000, now=now, guid=record.guid
            )
        )
        return made

    for first in (20, 30):
        (key, read), (other, none), replayed = asyncio.run(spends(first))
        assert key is not None and key.last_seen_nonce == first
        assert other is not None and other.last_seen_nonce == first + 1
        assert none is None and replayed == (None, None)
        alone = storage.read_invoice(record.guid)
        assert read is not None and alone is not None
        assert (read.version, read.status, read.detected) == (
            alone.version,
            alone.status,
            alone.detected,
        )
        assert read.invoice() == alone.invoice()
        with storage.transaction() as tx:
            stored = tx.get_session_key(address)
        assert stored is not None and stored.last_seen_nonce == first + 1


def test_spend_nonce_then_insert_invoice_async_writes_all_or_nothing(storage: Storage) -> None:
    """The optional async creation (``AsyncSignedCreate``): on the expected key the nonce
    is spent, the invoice stored and its owner's count moved, in one commit; a replay, or
    a key whose owner or encryption key is not the expected one, writes nothing at all
    (that nonce stays unspent), whichever mode."""
    if not callable(getattr(storage, "spend_nonce_then_insert_invoice_async", None)):
        pytest.skip("this store has no spend_nonce_then_insert_invoice_async (optional)")
    creator = cast(AsyncSignedCreate, storage)

    def create(**terms: Any) -> SessionKey | None:
        return asyncio.run(creator.spend_nonce_then_insert_invoice_async(**terms))

    _creates_all_or_nothing(storage, create)


def test_spend_nonce_then_insert_invoice_writes_all_or_nothing(storage: Storage) -> None:
    """The optional sync creation (``SignedCreate``, a sync host's): as the async one."""
    if not callable(getattr(storage, "spend_nonce_then_insert_invoice", None)):
        pytest.skip("this store has no spend_nonce_then_insert_invoice (optional)")
    _creates_all_or_nothing(storage, cast(SignedCreate, storage).spend_nonce_then_insert_invoice)


def _creates_all_or_nothing(storage: Storage, made: Callable[..., SessionKey | None]) -> None:
    key = session_key()
    with storage.transaction() as tx:
        tx.put_session_key(key)
    now = key.registered_at + 60
    first, second = invoice(), invoice("00000000-0000-4000-8000-000000000002")

    def create(nonce: int, expect: SessionKey, record: Invoice, strict: bool) -> SessionKey | None:
        return made(
            address=key.address, nonce=nonce, digest=_digest(str(nonce)), window=1000,
            strict=strict, now=now, expect=expect, invoice=record,
        )  # fmt: skip

    def stored() -> tuple[int, list[str]]:
        with storage.transaction() as tx:
            found = [r.guid for r in (tx.get_invoice(first.guid), tx.get_invoice(second.guid)) if r]
            return tx.count_invoices(owner=OWNER), found

    spent = create(5, key, first, strict=False)
    assert spent is not None and spent.last_seen_nonce == 5 and spent.owner == key.owner
    assert stored() == (1, [first.guid])
    with storage.transaction() as tx:
        assert tx.get_invoice(first.guid) == first
    assert create(5, key, second, strict=False) is None  # a replay
    other_owner = attrs.evolve(key, owner="0x" + "55" * 20)
    other_encryption = attrs.evolve(key, encryption_public_key="0x04" + "11" * 64)
    for expect in (other_owner, other_encryption):
        assert create(6, expect, second, strict=True) is None
    assert stored() == (1, [first.guid])
    spent = create(6, key, second, strict=True)  # never spent: accepted now
    assert spent is not None and spent.last_seen_nonce == 6
    assert stored() == (2, [first.guid, second.guid])
