"""The checkout push bench's ceiling: a bare Litestar app holding event streams, no paycore.

Run under the very server ``paycore serve`` runs (``paycore.runtime.serve.gunicorn_server``,
one worker, the same worker class and connection cap), it answers:

- ``GET /paycore/invoice/{guid}/events``: ``text/event-stream``, a first message at once,
  then one fixed message (``id: <n>`` and ``data: x``) each time ``guid`` is bumped; a
  coroutine per stream waiting on an ``asyncio.Event``, no heartbeat, no storage;
- ``POST /bump/{guid}``: wake that invoice's streams (the change, from the bench);
- ``GET /paycore/invoice/{guid}``: fixed bytes (the plain GET answered meanwhile);
- ``GET /health``.

So the same number of open streams, each pushed the same changes, costs this server only
what holding a connection and writing to it costs: paycore's streams against this are what
paycore itself costs.

    python bench/bare_stream_app.py --port 8001 [--connections 12000]
"""

# No ``from __future__ import annotations``: Litestar reads the handlers' annotations.
import argparse
import asyncio
from collections.abc import AsyncIterator
from typing import Any

from paycore.runtime.serve import gunicorn_server

PREFIX = "/paycore"


def build() -> Any:
    from litestar import Litestar, get, post
    from litestar.response import Response, Stream

    waiting: dict[str, set[asyncio.Event]] = {}
    bumps: dict[str, int] = {}

    async def events(guid: str) -> AsyncIterator[bytes]:
        ready = asyncio.Event()
        waiting.setdefault(guid, set()).add(ready)
        try:
            yield b"retry: 3000\n\nid: 0\ndata: x\n\n"
            while True:
                await ready.wait()
                ready.clear()
                yield f"id: {bumps.get(guid, 0)}\ndata: x\n\n".encode()
        finally:
            found = waiting.get(guid)
            if found is not None:
                found.discard(ready)
                if not found:
                    del waiting[guid]

    @get(f"{PREFIX}/invoice/{{guid:str}}/events")
    async def stream(guid: str) -> Stream:
        return Stream(events(guid), media_type="text/event-stream")

    @post("/bump/{guid:str}", status_code=204)
    async def bump(guid: str) -> None:
        bumps[guid] = bumps.get(guid, 0) + 1
        for ready in waiting.get(guid, ()):
            ready.set()

    @get(f"{PREFIX}/invoice/{{guid:str}}")
    async def invoice(guid: str) -> Response[bytes]:
        return Response(b'{"status":"init"}', media_type="application/json")

    @get("/health")
    async def health() -> dict[str, bool]:
        return {"ok": True}

    return Litestar([stream, bump, invoice, health])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--connections", type=int, default=12_000)
    args = parser.parse_args()
    server = gunicorn_server(
        "litestar", build, host="127.0.0.1", port=args.port, connections=args.connections
    )
    server.run()


if __name__ == "__main__":
    main()
