"""The stream board (``paycore.realtime.stream_board``): what lets one process hold 10,000
open checkout streams. One read per change however many streams watch the invoice; no read
at all while nothing changes (no per-stream timer re-reading an open invoice); a detected
transfer, which writes no event, still reaching a listening page through the board's
batched recheck; heartbeats only to quiet streams. Driven on an event loop directly, as
Litestar drives a stream, so the counts are the board's own."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from decimal import Decimal
from typing import Any

import pytest
from realtime_helpers import CHAIN, PAYER, Clock, Merchant, account, make_gateway

from paycore import NATIVE, Deposit, Gateway
from paycore.realtime import hub_for
from paycore.realtime.invoice_stream import HEARTBEAT, admit, open_stream
from paycore.realtime.stream_board import StreamBoard


@pytest.fixture
def gateway(clock: Clock) -> Iterator[Gateway]:
    gw = make_gateway(clock, event_stream_heartbeat=0.4)
    yield gw
    gw.close()


async def _opened(gateway: Gateway, guid: str) -> AsyncIterator[bytes]:
    stream = open_stream(gateway, hub_for(gateway), guid, None)
    assert admit(stream, threaded=False)
    chunks = stream.async_chunks()
    assert b"data: " in await chunks.__anext__()  # retry: and the invoice as it is
    return chunks


async def _next_message(chunks: AsyncIterator[bytes], timeout: float = 5.0) -> bytes:
    """The next chunk that is not a heartbeat."""
    while True:
        chunk = await asyncio.wait_for(chunks.__anext__(), timeout)
        if chunk != HEARTBEAT:
            return chunk


def _board(gateway: Gateway) -> StreamBoard:
    board = hub_for(gateway).board
    assert board is not None
    return board


def test_one_read_per_change_however_many_streams_watch(gateway: Gateway) -> None:
    merchant = Merchant(gateway, account("board owner"))
    invoice = merchant.invoice(value="20")

    async def scenario() -> None:
        streams = [await _opened(gateway, invoice.guid) for _ in range(50)]
        board = _board(gateway)
        before = board.reads
        await asyncio.to_thread(merchant.pay, invoice, "0.004")
        got = await asyncio.gather(*(_next_message(s) for s in streams))
        assert all(b'"status":"partialPaid"' in m for m in got)
        assert len(set(got)) == 1  # the same bytes, made once
        assert board.reads - before == 1
        for stream in streams:
            await stream.aclose()  # type: ignore[attr-defined]

    asyncio.run(scenario())
    assert hub_for(gateway).streams() == 0
    assert _board(gateway).watching() == 0


def test_idle_open_streams_read_nothing_and_only_beat(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Open invoices, nothing changing, several recheck rounds: no invoice read at all
    (the recheck is one detected-transfers read for all of them), heartbeats only."""
    monkeypatch.setattr(StreamBoard, "recheck", 0.2)
    merchant = Merchant(gateway, account("idle owner"))
    invoices = [merchant.invoice(value="20") for _ in range(20)]
    asked: list[int] = []
    detected_of = gateway.detected_of

    def counting(guids: Any) -> Any:
        guids = list(guids)
        asked.append(len(guids))
        return detected_of(guids)

    monkeypatch.setattr(gateway, "detected_of", counting)

    async def scenario() -> None:
        streams = [await _opened(gateway, i.guid) for i in invoices]
        board = _board(gateway)
        before = board.reads
        chunks = await asyncio.gather(*(asyncio.wait_for(s.__anext__(), 3) for s in streams))
        assert set(chunks) == {HEARTBEAT}
        await asyncio.sleep(0.5)
        assert board.reads == before
        assert asked and max(asked) == len(invoices)  # every open invoice, in one call
        for stream in streams:
            await stream.aclose()  # type: ignore[attr-defined]

    asyncio.run(scenario())


def test_a_detected_transfer_reaches_a_listening_page(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A detected transfer writes no outbox event: the board's recheck finds it."""
    monkeypatch.setattr(StreamBoard, "recheck", 0.2)
    merchant = Merchant(gateway, account("detected owner"))
    invoice = merchant.invoice(value="20")
    other = merchant.invoice(value="20")
    transfer = Deposit(
        chain_id=CHAIN,
        tx_hash="0x" + "ab" * 32,
        log_index=-1,
        token=NATIVE,
        from_=PAYER,
        to=invoice.address,
        amount=Decimal("0.01"),
        timestamp=int(gateway.now()),
        block_number=50,
        block_hash="0x" + f"{50:064x}",
    )

    async def scenario() -> None:
        watched = await _opened(gateway, invoice.guid)
        untouched = await _opened(gateway, other.guid)
        board = _board(gateway)
        before = board.reads
        await asyncio.to_thread(gateway.record_detected, CHAIN, [transfer], {50: 1}, 3)
        seen = await _next_message(watched)
        assert b'"confirmations":1' in seen
        await asyncio.to_thread(gateway.record_detected, CHAIN, [transfer], {50: 2}, 3)
        assert b'"confirmations":2' in await _next_message(watched)
        assert board.reads - before == 2  # the changed invoice only, once per change
        assert await asyncio.wait_for(untouched.__anext__(), 3) == HEARTBEAT  # nothing else
        await watched.aclose()  # type: ignore[attr-defined]
        await untouched.aclose()  # type: ignore[attr-defined]

    asyncio.run(scenario())


def test_a_board_read_that_started_before_a_stream_is_not_offered_to_it() -> None:
    """A read started before a stream began to watch may predate its first read: taking
    it would send an older version after a newer one."""
    from paycore.realtime.stream_board import Watch

    watch = Watch("g", floor=5)
    watch.offer(4, '"old"', lambda: b"old")
    assert watch.take() is None
    watch.offer(6, '"new"', lambda: b"new")
    offered = watch.take()
    assert offered is not None and offered[0] == '"new"'
    watch.offer(6, '"again"', lambda: b"again")  # not newer than the last taken
    assert watch.take() is None
