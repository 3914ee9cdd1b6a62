"""Paycore's views: copy Flask's request into a paycore Request, and back.

Each row of the route table gets a view of its own (``paycore.<route name>``), made by
:func:`route_view`; a catch-all view takes every other path and method, so paycore's own
404/405 texts answer them. Everything a paycore endpoint decides (routing, auth, errors,
JSON) happens in ``paycore.api.handle_streamed``; this module only knows how WSGI carries a
request, so that the Flask and Litestar adapters cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import IO, Any

from flask import Response as FlaskResponse
from flask import current_app, request
from werkzeug.wsgi import get_content_length, get_input_stream

from paycore import Gateway
from paycore.api import MAX_BODY, Request, Response, Route, handle_streamed
from paycore.api.http import LowerHeaders, text_response
from paycore.api.streams import for_server
from paycore.errors import PayloadTooLarge

#: Every method reaches paycore, which answers 404/405 itself with its own one-line texts.
METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE"]

EXTENSION_KEY = "paycore"
#: The environ key under which paycore's ASGI front (``paycore_flask.asgi``) hands a view
#: a list: a view that answers with an event stream puts the stream there, and the front
#: sends it from its event loop instead of a thread holding it for the stream's life.
ASYNC_STREAMS = "paycore.async_streams"

_READ_CHUNK = 16 * 1024
#: How much of a body over MAX_BODY is read and dropped so its connection stays usable
#: (:func:`_discard`); past it the server closes the connection after the 413.
DISCARD_LIMIT = 1024 * 1024


def paycore_view(subpath: str = "") -> FlaskResponse:
    """Answer any request under the prefix. ``subpath`` is the path below it, decoded."""
    return answer("/" + subpath)


def route_view(route: Route, prefix: str) -> Callable[..., FlaskResponse]:
    """The view of one table row: a function of its own, named for the route, so that
    decorators keyed by view (rate limiters, caches) can tell rows apart."""

    def view(**_params: str) -> FlaskResponse:
        return answer(request.path[len(prefix) :] or "/")

    view.__name__ = view.__qualname__ = route.name
    view.__doc__ = route.summary
    return view


def answer(path: str) -> FlaskResponse:
    """The core's answer to the current request, ``path`` being the part below the prefix.
    Flask's ``request`` and ``current_app`` are context-local proxies, each use a lookup:
    the environ and paycore's extension are taken once."""
    environ = request.environ
    body = read_capped_body(environ)
    if body is None:
        return to_flask(payload_too_large())
    extension = _extension()
    plain = to_paycore(environ, path, body, _root_url(environ), extension.prefix)
    response = handle_streamed(extension.gateway, plain)
    slot = environ.get(ASYNC_STREAMS)
    if response.stream is None or not isinstance(slot, list):
        return to_flask(for_server(response, threaded=True))
    # Behind paycore's ASGI front: the event stream goes to the front's event loop (one
    # coroutine, no thread); this thread answers the head and is free again.
    served = for_server(response, threaded=False)
    if served.stream is not None:
        slot.append(served.stream)
    return to_flask(served)


#: ``request.root_url`` by the environ values werkzeug makes it from (scheme, Host header,
#: server name and port, script name: a host's ``ProxyFix`` rewrote them before this), for
#: a few recent ones: werkzeug decodes and re-quotes it on every request, a tenth of a
#: signed read's view. Bounded, since the Host header is the client's.
_ROOT_URLS: dict[tuple[object, ...], str] = {}
_ROOT_URLS_MAX = 64


def _root_url(environ: dict[str, object]) -> str:
    """``request.root_url``, remembered for the environ values it is made from."""
    key = (
        environ.get("wsgi.url_scheme"),
        environ.get("HTTP_HOST"),
        environ.get("SERVER_NAME"),
        environ.get("SERVER_PORT"),
        environ.get("SCRIPT_NAME"),
        tuple(request.trusted_hosts or ()),
    )
    found = _ROOT_URLS.get(key)
    if found is None:
        found = request.root_url  # raises for an untrusted host, as before
        if len(_ROOT_URLS) >= _ROOT_URLS_MAX:
            _ROOT_URLS.clear()
        _ROOT_URLS[key] = found
    return found


def checkout_url() -> str:
    """The checkout page's address as the current request resolves it (``public_url``, or
    the address the request came in at, under paycore's prefix): what a host view that
    creates invoices itself passes on, ``gateway.create_invoice(..., checkout_url=...)``,
    so its buyers get the same link paycore's own POST /invoice would give them."""
    return current_gateway().checkout_url_for(request.root_url, mount_prefix())


def mount_prefix() -> str:
    """The prefix paycore is mounted under in the current app."""
    prefix: str = current_app.extensions[EXTENSION_KEY].prefix
    return prefix


def current_gateway() -> Gateway:
    """The gateway of the Flask app handling the current request (or in the current app
    context): what host views use to call paycore's Python API next to its routes."""
    gateway: Gateway = _extension().gateway
    return gateway


def _extension() -> Any:
    """Paycore's extension on the current app (its gateway and prefix)."""
    try:
        return current_app.extensions[EXTENSION_KEY]
    except KeyError:
        raise RuntimeError(
            "paycore is not registered on this Flask app; call PayCore(app) or init_app(app)"
        ) from None


def read_capped_body(environ: dict[str, object]) -> bytes | None:
    """The body, or ``None`` once it is known to exceed MAX_BODY.

    A declared Content-Length over the limit is refused without keeping a byte of it. A
    chunked body (no Content-Length, server-terminated input) is read in slices and dropped
    as soon as it passes the limit, so a client cannot make us buffer more than 64 KiB + one
    slice. Either way the rest is read and dropped up to DISCARD_LIMIT (:func:`_discard`).
    The host's MAX_CONTENT_LENGTH is deliberately not applied: paycore's limit and
    its 413 text are the same under every framework.
    """
    declared = get_content_length(environ)
    stream: IO[bytes] = get_input_stream(environ, max_content_length=None)
    if declared is not None and declared > MAX_BODY:
        _discard(stream, 0)
        return None
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(_READ_CHUNK)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > MAX_BODY:
            _discard(stream, total)
            return None
        chunks.append(chunk)


def _discard(stream: IO[bytes], read: int) -> None:
    """Read and drop the rest of a refused body, up to DISCARD_LIMIT bytes in all.

    The 413 goes out with ``Connection: keep-alive`` (gunicorn decides that header, and a
    WSGI app may not send hop-by-hop headers), and gunicorn then drains only 64 KiB of what
    is left before it closes the connection: a client that sent a body somewhat over the
    limit would find its kept-alive connection gone. Reading the rest here, to a bound,
    keeps the announcement true for every body under the bound."""
    while read < DISCARD_LIMIT:
        chunk = stream.read(min(_READ_CHUNK, DISCARD_LIMIT - read))
        if not chunk:
            return
        read += len(chunk)


def to_paycore(
    environ: dict[str, object], path: str, body: bytes, root_url: str = "", prefix: str = ""
) -> Request:
    """``root_url`` is werkzeug's (``request.root_url``): the Host header and scheme as the
    WSGI environ has them, so a ``ProxyFix`` the host installed is honoured, and only then."""
    return Request(
        method=str(environ["REQUEST_METHOD"]).upper(),
        path=path,
        query_string=_wsgi_text(environ.get("QUERY_STRING", "")),
        headers=environ_headers(environ),
        body=body,
        raw_uri=raw_uri(environ),
        root_url=root_url.rstrip("/"),
        prefix=prefix,
        # REMOTE_ADDR as the WSGI server set it, or as a ProxyFix the host installed rewrote it
        client=str(environ.get("REMOTE_ADDR") or ""),
    )


#: The two fields WSGI carries without the ``HTTP_`` prefix; their ``HTTP_`` spellings are
#: not fields (werkzeug's ``EnvironHeaders`` skips them too).
_CONTENT_FIELDS = {"CONTENT_TYPE": "content-type", "CONTENT_LENGTH": "content-length"}
_NOT_FIELDS = frozenset({"HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"})


def environ_headers(environ: Mapping[str, Any]) -> LowerHeaders:
    """The request's header fields as werkzeug's ``EnvironHeaders`` lists them (a field
    the server joined stays joined), with the names in lower case: made in one pass over
    the environ, where the mapping of ``EnvironHeaders`` and the core's lowering of its
    copy cost a poll's view a fifth of its time."""
    fields = LowerHeaders()
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            if key not in _NOT_FIELDS:
                fields[key[5:].replace("_", "-").lower()] = value
        elif key in _CONTENT_FIELDS and value:
            fields[_CONTENT_FIELDS[key]] = value
    return fields


def raw_uri(environ: dict[str, object]) -> str:
    """The request target exactly as the client sent it: a GET's session signature covers it.

    Servers that keep it put it in RAW_URI (gunicorn, werkzeug) or REQUEST_URI (werkzeug,
    uWSGI, mod_wsgi). Otherwise rebuild it from the decoded pieces, re-quoting the way
    clients do; the query string is never decoded by WSGI, so it is copied as is.
    """
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if raw:
        text = _wsgi_text(raw)
        if "://" in text.split("?", 1)[0]:  # absolute-form target (a proxy request)
            scheme_end = text.index("://") + 3
            slash = text.find("/", scheme_end)
            text = text[slash:] if slash != -1 else "/"
        query = _wsgi_text(environ.get("QUERY_STRING", ""))
        if query and "?" not in text:
            # Some hosts (werkzeug's test client among them) set the target without the
            # query they pass on separately; the query string is the client's, undecoded.
            text += "?" + query
        return text
    from urllib.parse import quote

    path = quote(
        _wsgi_text(environ.get("SCRIPT_NAME", "")) + _wsgi_text(environ.get("PATH_INFO", "")),
        safe="/:@!$&'()*+,;=~",
    )
    query = _wsgi_text(environ.get("QUERY_STRING", ""))
    return path + ("?" + query if query else "")


def _wsgi_text(value: object) -> str:
    """WSGI hands raw bytes over as latin-1 text (PEP 3333); recover the client's UTF-8."""
    return str(value).encode("latin-1", "replace").decode("utf-8", "replace")


def payload_too_large() -> Response:
    """The core's own 413 answer, so the text is paycore's and not Flask's HTML page."""
    return text_response(PayloadTooLarge(MAX_BODY).text, PayloadTooLarge.status)


def to_flask(response: Response) -> FlaskResponse:
    """Status, body, content type and headers copied as is (werkzeug drops a HEAD's body);
    a streamed body is handed to werkzeug as the iterable it is, and made while sent."""
    return FlaskResponse(
        response.body if response.chunks is None else response.chunks,
        status=response.status,
        headers=list(response.headers.items()),
        content_type=response.content_type,
    )
