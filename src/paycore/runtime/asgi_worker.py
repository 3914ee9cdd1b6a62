"""The gunicorn worker class ``paycore serve`` runs both frameworks in: uvicorn's, with caps.

uvicorn's own worker class takes neither gunicorn's ``worker_connections`` nor a WebSocket
message cap, so this subclass sets them on the uvicorn config it built:

- ``limit_concurrency`` from ``worker_connections`` (``--worker-connections``): past that
  many open connections a worker answers HTTP requests with 503 instead of running out of
  file descriptors;
- ``ws_max_size``: a WebSocket message larger than this closes the socket (1009) instead of
  being buffered (uvicorn's default is 16 MiB; a client's frames here are a few hundred
  bytes, ``paycore.realtime.frames.MAX_CLIENT_FRAME``).

It also drops one misleading line of uvicorn's: after an upgrade refused with an HTTP answer
(429 past a socket cap, 404 elsewhere: the ASGI ``websocket.http.response`` extension, which
uvicorn sends correctly) its WebSocket protocol still logs "ASGI callable returned without
completing handshake" at ERROR, once per refusal, which a client could repeat at will.
"""

from __future__ import annotations

import logging
from typing import Any

from uvicorn_worker import UvicornWorker

#: The largest WebSocket message a client may send (its register frame is < 4 KiB).
WS_MAX_SIZE = 64 * 1024


class PaycoreWorker(UvicornWorker):  # type: ignore[misc]
    """``uvicorn_worker.UvicornWorker`` with the caps above."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.config.limit_concurrency = self.cfg.worker_connections
        self.config.ws_max_size = WS_MAX_SIZE
        logging.getLogger("uvicorn.error").addFilter(_drop_refused_handshake)


def _drop_refused_handshake(record: logging.LogRecord) -> bool:
    return record.getMessage() != "ASGI callable returned without completing handshake."
