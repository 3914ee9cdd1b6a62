"""GET /invoice/{guid}/events: the checkout page's push, as Server-Sent Events, under both
adapters' real servers, read by a real HTTP client (httpx) as a browser's EventSource
would: the invoice as GET answers it first, each change after, ids that are the GET's
ETags, Last-Event-ID, heartbeats, lazy expiry for a page that only listens, the per-process
cap, and changes another process commits reaching the stream through the outbox."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from realtime_helpers import PREFIX, Clock, Merchant, account, make_gateway, served, wait_until
from test_realtime_outbox import sql_gateway

from paycore import Gateway
from paycore.realtime import hub_for


class Events:
    """An open stream, read line by line into messages (id, data) and comment lines."""

    def __init__(self, client: httpx.Client, url: str, headers: dict[str, str]) -> None:
        self._context = client.stream("GET", url, headers=headers)
        self.response = self._context.__enter__()
        self._lines = self.response.iter_lines()

    def next(self) -> dict[str, Any]:
        """The next message or comment: {"id", "data"} / {"comment"} / {"retry"}."""
        found: dict[str, Any] = {}
        for line in self._lines:
            if line == "":
                if found:
                    return found
                continue
            if line.startswith(":"):
                return {"comment": line[1:].strip()}
            name, _, value = line.partition(": ")
            found[name] = value
        raise AssertionError("the stream ended")

    def message(self, skip_comments: bool = True) -> dict[str, Any]:
        while True:
            found = self.next()
            if "data" in found or not skip_comments:
                return found

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._context.__exit__(None, None, None)


@contextlib.contextmanager
def events(base: str, guid: str, **headers: str) -> Iterator[Events]:
    with httpx.Client(timeout=httpx.Timeout(10.0)) as client:
        stream = Events(client, f"{base}{PREFIX}/invoice/{guid}/events", headers)
        try:
            yield stream
        finally:
            stream.close()


@pytest.fixture(params=["flask", "flask-asgi", "litestar"])
def framework(request: pytest.FixtureRequest) -> str:
    """Flask under a threaded WSGI server and behind paycore's ASGI front (where a stream
    is a coroutine, as under Litestar), and Litestar."""
    param: str = request.param
    return param


@pytest.fixture
def quick_gateway(clock: Clock) -> Iterator[Gateway]:
    gw = make_gateway(clock, event_stream_heartbeat=0.3, event_streams_threaded_max=2)
    yield gw
    gw.close()


@pytest.fixture
def quick(framework: str, quick_gateway: Gateway) -> Iterator[str]:
    with served(framework, quick_gateway) as base:
        yield base


def get(base: str, guid: str) -> httpx.Response:
    return httpx.get(f"{base}{PREFIX}/invoice/{guid}", timeout=10)


def test_the_stream_starts_with_the_invoice_and_pushes_each_change(
    quick: str, quick_gateway: Gateway
) -> None:
    merchant = Merchant(quick_gateway, account("stream owner"))
    invoice = merchant.invoice(value="20")  # 0.01 ETH
    with events(quick, invoice.guid) as stream:
        assert stream.response.status_code == 200
        assert stream.response.headers["content-type"].startswith("text/event-stream")
        assert stream.response.headers["cache-control"] == "no-cache"
        assert stream.next() == {"retry": "3000"}
        first = stream.message()
        now = get(quick, invoice.guid)
        assert first["data"] == now.text
        assert f'"{first["id"]}"' == now.headers["etag"]
        merchant.pay(invoice, "0.004")
        changed = stream.message()
        assert changed["id"] != first["id"]
        assert changed["data"] == get(quick, invoice.guid).text
        assert '"status":"partialPaid"' in changed["data"]
        merchant.pay(invoice, "0.006")
        assert '"status":"paid"' in stream.message()["data"]
        # Nothing changed since: heartbeats only.
        assert stream.next() == {"comment": "keep-alive"}
    hub = hub_for(quick_gateway)
    wait_until(lambda: hub.streams() == 0, 5, "the closed stream's place back")


def test_last_event_id_of_the_current_version_skips_the_first_message(
    quick: str, quick_gateway: Gateway
) -> None:
    merchant = Merchant(quick_gateway, account("resume owner"))
    invoice = merchant.invoice(value="20")
    etag = get(quick, invoice.guid).headers["etag"].strip('"')
    with events(quick, invoice.guid, **{"last-event-id": etag}) as stream:
        assert stream.next() == {"retry": "3000"}
        assert stream.next() == {"comment": "keep-alive"}
        merchant.pay(invoice, "0.004")
        assert '"status":"partialPaid"' in stream.message()["data"]
    stale = etag
    with events(quick, invoice.guid, **{"last-event-id": stale}) as stream:
        assert stream.next() == {"retry": "3000"}
        assert '"status":"partialPaid"' in stream.message()["data"]  # what it missed


def test_a_listening_page_sees_the_invoice_expire_once(
    quick: str, quick_gateway: Gateway, clock: Clock
) -> None:
    owner = account("expiry owner")
    merchant = Merchant(quick_gateway, owner)
    invoice = merchant.invoice(value="20", deadlineSecs=60)
    with events(quick, invoice.guid) as stream:
        assert '"status":"init"' in stream.message()["data"]
        clock.offset += 61
        expired = stream.message()
        assert '"status":"expired"' in expired["data"]
    with quick_gateway.storage.transaction() as tx:
        drained = tx.outbox_since(0, 100, owner.address)
    assert [e.type for e in drained.events if e.guid == invoice.guid] == ["invoice.expired"]


def test_an_unknown_invoice_is_a_404_before_any_stream(quick: str) -> None:
    guid = "00000000-0000-4000-8000-00000000beef"
    answer = httpx.get(f"{quick}{PREFIX}/invoice/{guid}/events", timeout=10)
    assert answer.status_code == 404
    assert answer.text == f"invoice {guid} not found"


def test_past_the_cap_a_stream_is_refused_503_and_the_place_comes_back(
    quick: str, quick_gateway: Gateway, framework: str
) -> None:
    merchant = Merchant(quick_gateway, account("cap owner"))
    invoice = merchant.invoice(value="20")
    hub = hub_for(quick_gateway)
    cap = 2
    if framework != "flask":  # its cap is 10,000 coroutines: lower it for the test
        object.__setattr__(quick_gateway.settings, "event_streams_max", 2)
    with events(quick, invoice.guid) as one, events(quick, invoice.guid) as two:
        one.message()
        two.message()
        assert hub.streams() == cap
        refused = httpx.get(f"{quick}{PREFIX}/invoice/{invoice.guid}/events", timeout=10)
        assert refused.status_code == 503
        assert refused.headers["retry-after"] == "10"
        assert refused.text == "too many open event streams here: poll meanwhile"
        assert get(quick, invoice.guid).status_code == 200  # plain requests still served
    wait_until(lambda: hub.streams() == 0, 5, "both places back")
    with events(quick, invoice.guid) as again:
        assert again.message()["data"] == get(quick, invoice.guid).text


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["flask", "litestar"])
def test_another_process_change_reaches_the_stream_through_the_outbox(
    framework: str, tmp_path: Path
) -> None:
    url = f"sqlite:///{tmp_path / 'shared.sqlite3'}"
    web = sql_gateway(url)
    other = sql_gateway(url)
    try:
        merchant = Merchant(other, account("outbox stream owner"))
        invoice = merchant.invoice(value="20")
        with served(framework, web) as base, events(base, invoice.guid) as stream:
            assert '"status":"init"' in stream.message()["data"]
            began = time.monotonic()
            paying = threading.Thread(target=merchant.pay, args=(invoice, "0.01"))
            paying.start()
            paid = stream.message()
            paying.join(10)
            assert '"status":"paid"' in paid["data"]
            assert time.monotonic() - began < 5
            assert paid["data"] == get(base, invoice.guid).text
    finally:
        other.close()
        web.close()


def test_behind_the_asgi_front_flask_streams_hold_no_thread(
    clock: Clock,
) -> None:
    """Behind paycore's ASGI front with two threads, five open streams (past the threaded
    cap of 2 and the thread count) all get their changes, plain requests are answered
    meanwhile, and each stream's place comes back when its client goes."""
    gateway = make_gateway(clock, event_stream_heartbeat=0.3, event_streams_threaded_max=2)
    try:
        merchant = Merchant(gateway, account("front stream owner"))
        invoice = merchant.invoice(value="20")
        hub = hub_for(gateway)
        with served("flask-asgi", gateway) as base, contextlib.ExitStack() as stack:
            streams = [stack.enter_context(events(base, invoice.guid)) for _ in range(5)]
            firsts = [stream.message() for stream in streams]
            assert hub.streams() == 5
            assert all(first["data"] == get(base, invoice.guid).text for first in firsts)
            for _ in range(3):
                assert get(base, invoice.guid).status_code == 200
            merchant.pay(invoice, "0.004")
            for stream in streams:
                assert '"status":"partialPaid"' in stream.message()["data"]
            stack.close()
            wait_until(lambda: hub.streams() == 0, 5, "every closed stream's place back")
    finally:
        gateway.close()
