"""``Response.chunks`` through both adapters: sent as produced, never joined first, and a
stream that fails part-way ends broken rather than short and whole-looking."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from litestar import Litestar, get
from litestar.response import Stream
from litestar.testing import TestClient

from paycore.api import Response
from paycore_flask.view import to_flask
from paycore_litestar.handler import to_litestar


class Producer:
    """Chunks made on demand, recording how many have been made when each is taken."""

    def __init__(self, count: int, fail_after: int | None = None) -> None:
        self.count = count
        self.fail_after = fail_after
        self.made = 0

    def __iter__(self) -> Iterator[bytes]:
        for n in range(self.count):
            if self.fail_after is not None and n == self.fail_after:
                raise ValueError("storage went away mid-export")  # what Litestar would swallow
            self.made += 1
            yield f"row {n}\n".encode()


def streamed(producer: Producer) -> Response:
    return Response(200, b"", "text/csv; charset=utf-8", {"x-kind": "export"}, chunks=producer)


def test_flask_hands_the_chunks_to_wsgi_one_at_a_time() -> None:
    producer = Producer(3)
    answer = to_flask(streamed(producer))
    assert answer.is_streamed and answer.headers["x-kind"] == "export"
    assert "content-length" not in {k.lower() for k, _ in answer.headers.items()}
    body = iter(answer.response)
    assert producer.made == 0  # nothing produced before the server asks
    assert next(body) == b"row 0\n" and producer.made == 1
    assert list(body) == [b"row 1\n", b"row 2\n"]


def test_flask_ends_a_failing_stream_with_the_error() -> None:
    answer = to_flask(streamed(Producer(3, fail_after=1)))
    body = iter(answer.response)
    assert next(body) == b"row 0\n"
    with pytest.raises(ValueError):
        next(body)


def _litestar_app(producer: Producer) -> Litestar:
    @get("/export", sync_to_thread=False)
    def export() -> Any:
        return to_litestar(streamed(producer))

    return Litestar(route_handlers=[export])


def test_litestar_streams_the_chunks() -> None:
    producer = Producer(4)
    assert isinstance(to_litestar(streamed(Producer(1))), Stream)
    with TestClient(_litestar_app(producer)) as client, client.stream("GET", "/export") as reply:
        assert reply.status_code == 200 and reply.headers["x-kind"] == "export"
        assert reply.headers["content-type"] == "text/csv; charset=utf-8"
        assert "content-length" not in reply.headers
        assert b"".join(reply.iter_bytes()) == b"row 0\nrow 1\nrow 2\nrow 3\n"
    assert producer.made == 4


def test_litestar_does_not_end_a_failing_stream_as_if_it_were_whole() -> None:
    """Litestar's own wrapper of a sync iterator ends the stream quietly on a ValueError;
    the adapter's must let the error through, so the transfer breaks."""
    producer = Producer(3, fail_after=1)
    with (
        TestClient(_litestar_app(producer)) as client,
        pytest.raises(Exception) as broken,
        client.stream("GET", "/export") as reply,
    ):
        b"".join(reply.iter_bytes())
    assert _holds(broken.value, ValueError) and producer.made == 1


def _holds(error: BaseException | None, kind: type[BaseException]) -> bool:
    """Whether ``kind`` is ``error``, its cause, or inside an exception group among them."""
    if error is None:
        return False
    if isinstance(error, kind):
        return True
    inner = list(getattr(error, "exceptions", ())) + [error.__cause__]
    return any(_holds(e, kind) for e in inner)
