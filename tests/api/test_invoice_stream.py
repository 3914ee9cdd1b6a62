"""The unpaged GET /invoices: read in batches while it is sent, the same bytes as a whole
answer, invoices created meanwhile left out, a failure cut short rather than closed as if
complete; and both adapters hand the pieces to their server instead of joining them."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import flask
import pytest
from litestar.response import Stream

import paycore_flask
from paycore import Gateway, Settings
from paycore.api import Request, handle, handle_streamed
from paycore.api.http import STREAM_PIECE, Response
from paycore.errors import StreamAborted
from paycore.gateway import INVOICE_STREAM_BATCH
from paycore.storage import Storage, StorageTx
from paycore.storage.memory import MemoryStorage
from paycore_litestar.handler import to_litestar

CHAIN = 31337
USDC = f"{CHAIN}:0x5FbDB2315678afecb367f032d93F642f64180aa3"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
LISTED = Request("GET", "/invoices", f"owner={OWNER}")


class CountingStorage(MemoryStorage):
    """Memory storage that records the ``limit`` of every ``invoices_after`` call."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[int] = []

    @contextmanager
    def transaction(self) -> Iterator[StorageTx]:
        with super().transaction() as tx:
            original = tx.invoices_after

            def invoices_after(**kwargs: Any) -> Any:
                self.reads.append(kwargs["limit"])
                return original(**kwargs)

            tx.invoices_after = invoices_after  # type: ignore[method-assign]
            yield tx


def gateway(storage: Storage, **settings: Any) -> Gateway:
    values: dict[str, Any] = {"database_url": "memory://", "auth_mode": "soft"}
    values.update(settings)
    return Gateway(Settings(**values), storage=storage, entry_points=False, clock=lambda: 1e9)


def create(gw: Gateway, n: int) -> list[str]:
    fields = {"value": "1", "chainId": CHAIN, "description": "d" * 40, "acceptedTokens": [USDC]}
    return [gw.create_invoice(OWNER, {**fields, "address": ADDRESS}).guid for _ in range(n)]


def test_the_stream_reads_in_batches_as_it_is_sent_and_matches_a_whole_answer() -> None:
    storage = CountingStorage()
    gw = gateway(storage)
    made = create(gw, 2 * INVOICE_STREAM_BATCH + 7)
    answer = handle_streamed(gw, LISTED)
    assert answer.status == 200 and answer.body == b"" and answer.chunks is not None
    storage.reads.clear()
    pieces = iter(answer.chunks)
    first = next(pieces)
    assert storage.reads == [INVOICE_STREAM_BATCH]  # one batch read so far, not the list
    created_meanwhile = create(gw, 1)
    rest = list(pieces)
    assert all(len(piece) < STREAM_PIECE + 1024 for piece in [first, *rest])
    body = b"".join([first, *rest])
    assert storage.reads == [INVOICE_STREAM_BATCH] * 3
    assert [i["guid"] for i in json.loads(body)] == made  # not created_meanwhile
    assert created_meanwhile[0] not in body.decode()
    whole = handle(gw, LISTED)
    assert whole.chunks is None
    assert json.loads(whole.body)[:-1] == json.loads(body)
    assert whole.body.startswith(body[:-1])  # byte for byte, before the newer invoice


def test_an_empty_list_streams_as_an_empty_array() -> None:
    assert handle(gateway(MemoryStorage()), LISTED).body == b"[]"


class FailingAfterFirstBatch(MemoryStorage):
    def __init__(self) -> None:
        super().__init__()
        self.armed = False

    @contextmanager
    def transaction(self) -> Iterator[StorageTx]:
        if self.armed:
            raise RuntimeError("database went away mid-stream")
        with super().transaction() as tx:
            yield tx


def test_a_failure_mid_stream_cuts_the_body_instead_of_closing_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    storage = FailingAfterFirstBatch()
    gw = gateway(storage)
    create(gw, INVOICE_STREAM_BATCH + 1)
    answer = handle_streamed(gw, LISTED)
    assert answer.chunks is not None
    pieces = iter(answer.chunks)
    got = next(pieces)  # a piece of the first batch: the status line has gone out
    storage.armed = True  # the second batch's read fails
    with caplog.at_level(logging.ERROR, logger="paycore.api"), pytest.raises(StreamAborted):
        for piece in pieces:
            got += piece
    assert got.startswith(b"[{") and not got.endswith(b"]")
    [line] = [r.getMessage() for r in caplog.records if r.name == "paycore.api"]
    assert line.startswith("streamed answer cut short: RuntimeError: database went away")


def test_both_adapters_stream_the_pieces() -> None:
    gw = gateway(MemoryStorage())
    made = create(gw, 3)
    app = flask.Flask("stream")
    paycore_flask.PayCore(app, gateway=gw, prefix="/paycore")  # type: ignore[attr-defined]
    answer = app.test_client().get(f"/paycore/invoices?owner={OWNER}", buffered=False)
    assert answer.is_streamed
    assert [i["guid"] for i in json.loads(answer.get_data())] == made
    streamed = to_litestar(handle_streamed(gw, LISTED))
    assert isinstance(streamed, Stream)
    plain = to_litestar(Response(200, b"[]"))
    assert not isinstance(plain, Stream)
