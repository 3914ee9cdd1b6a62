"""How an adapter serves an event stream (``GET /invoice/{guid}/events``): let it in
under the process's cap for its kind of server, or answer 503 so the page keeps polling.

One call for both adapters, so the cap, the text and ``Retry-After`` cannot drift: Flask
(WSGI, a thread per open response) passes ``threaded=True`` and sends ``chunks``;
Litestar passes ``threaded=False`` and sends ``stream.async_chunks()`` on its event loop.
"""

from __future__ import annotations

import attrs

from ..realtime.invoice_stream import admit
from .http import Response, text_response

#: Seconds a page refused a stream waits before it tries again (it polls meanwhile).
RETRY_AFTER = "10"


def for_server(response: Response, *, threaded: bool) -> Response:
    """``response`` as this server sends it: unchanged unless it holds an event stream;
    then with the stream's chunks (``threaded``), or a 503 when the cap is reached."""
    stream = response.stream
    if stream is None:
        return response
    if not admit(stream, threaded=threaded):
        refused = text_response("too many open event streams here: poll meanwhile", 503)
        return attrs.evolve(refused, headers={"retry-after": RETRY_AFTER})
    if threaded:
        return attrs.evolve(response, chunks=stream.sync_chunks())
    return response
