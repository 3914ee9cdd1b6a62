"""Plain request and response records: all an adapter has to build and send back.

Adapters copy the framework's request into a :class:`Request` and the :class:`Response` back
into the framework's; nothing else about HTTP is theirs to decide.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

import attrs

from ..auth.session import SESSION_HEADERS, URI_SIGNED_METHODS
from ..domain.reading import shown as _shown
from ..domain.records import json_bytes
from ..errors import InvalidInput, StreamAborted
from ..ops.redaction import redact

#: Request bodies above this are refused with 413 before they are read whole.
MAX_BODY = 64 * 1024

if TYPE_CHECKING:
    from ..realtime.invoice_stream import EventStream

log = logging.getLogger("paycore.api")


_SESSION_NAMES = frozenset(SESSION_HEADERS)


class LowerHeaders(dict[str, str]):
    """Header fields whose names an adapter has put in lower case already (Litestar's, from
    the ASGI scope): the request keeps them as they are instead of lowering a copy, a
    step the checkout page's poll paid for on every request."""


def _lower(headers: Mapping[str, str]) -> dict[str, str]:
    if type(headers) is LowerHeaders:
        return headers
    return LowerHeaders({k.lower(): v for k, v in headers.items()})


def _sends_session(request: Request) -> bool:
    return not _SESSION_NAMES.isdisjoint(request.headers)


@attrs.frozen
class Request:
    """One request. Parameters come from exactly the bytes a session signature covers
    (docs/decisions.md, "What a session signature covers"): the URI of a GET or HEAD, the
    body of anything else. A POST's query string and a GET's body are never read."""

    method: str
    path: str  # below the mount prefix, starting with "/"
    query_string: str = ""
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=_lower)
    body: bytes = b""
    #: The URI as the client sent it (prefix + path + "?" + query): what a GET signature covers.
    raw_uri: str = ""
    #: The app's address as the framework reports it for this request (``scheme://host``
    #: and any script root; the host's proxy handling applied if it configured one), and
    #: the prefix paycore is mounted under: an invoice's checkout page is built from them
    #: when no ``public_url`` is configured. Empty: unknown (the gateway's default).
    root_url: str = ""
    prefix: str | None = None
    #: The client's address as the framework reports it (the host's proxy handling applied,
    #: if it configured one): what per-client limits count by. Empty: unknown, one key for all.
    client: str = ""
    #: Whether any session header is present (the request then is session-signed or 401).
    #: Worked out once, when the request is made: every request asks it several times.
    sends_session: bool = attrs.field(
        init=False, eq=False, repr=False, default=attrs.Factory(_sends_session, takes_self=True)
    )

    @property
    def uri(self) -> str:
        if self.raw_uri:
            return self.raw_uri
        return self.path + ("?" + self.query_string if self.query_string else "")

    @property
    def reads_uri(self) -> bool:
        """Whether the parameters are in the URI (GET, HEAD: what their signature covers);
        every other method's parameters are its body."""
        return self.method.upper() in URI_SIGNED_METHODS

    def query(self, name: str) -> str | None:
        """A parameter of a GET/HEAD, read from the signed URI; ``None`` for other methods."""
        return self._query_params().get(name) if self.reads_uri else None

    def json(self) -> dict[str, Any]:
        """The request's parameters as one object: a GET/HEAD's query (values are strings),
        or the JSON object in the body of any other method (an empty body is ``{}``)."""
        if self.reads_uri:
            return self._query_params()
        if not self.body:
            return {}
        return parse_json_object(self.body)

    def _query_params(self) -> dict[str, str]:
        """The query of :attr:`uri` -- the signed text, not a second copy of it that an
        adapter might have decoded differently. A repeated name is refused: which of two
        values counts is exactly where a signer and a parser can disagree."""
        _, _, query = self.uri.partition("?")
        found: dict[str, str] = {}
        if not query:  # the checkout page's poll: no query to parse
            return found
        for name, value in parse_qsl(query, keep_blank_values=True):
            if name in found:
                raise InvalidInput(_shown(name), "given more than once in the query")
            found[check_text(name, name)] = check_text(value, name)
        return found


def parse_json_object(body: bytes) -> dict[str, Any]:
    """A JSON object from UTF-8 bytes, read strictly: a key repeated at any depth, the
    non-standard constants (``NaN``, ``Infinity``) and any other encoding are refused, because
    each is a place where the client's serialiser and this parser could read the same signed
    bytes as different values."""
    try:
        text = body.decode("utf-8")
        data = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise InvalidInput("body", "not valid JSON") from None
    if not isinstance(data, dict):
        raise InvalidInput("body", "must be a JSON object")
    if "\\u" in text:
        # A NUL or a lone surrogate can reach a parsed string only through a ``\u`` escape:
        # strict UTF-8 decoding admits no surrogate, and strict JSON no raw control
        # character. Without one the walk over every string finds nothing.
        _check_strings(data, "body")
    return data


#: One regex scan instead of a Python loop per character: it runs on every string of
#: every request body.
_SURROGATE = re.compile("[\ud800-\udfff]")


def check_text(value: str, field: str) -> str:
    """``value`` unless it holds a character no storage keeps: NUL (PostgreSQL refuses it in
    text) or a lone UTF-16 surrogate (JSON's ``\\ud800`` escape decodes to one, and it
    cannot be encoded to UTF-8 on the way to storage). Refused as bad input, never a 500."""
    if "\x00" in value:
        raise InvalidInput(_shown(field), "must not contain a NUL character")
    if _SURROGATE.search(value) is not None:
        raise InvalidInput(_shown(field), "must not contain a lone UTF-16 surrogate")
    return value


def _check_strings(data: Any, field: str) -> None:
    """Every key and string value of a parsed body, at any depth, through check_text."""
    if isinstance(data, str):
        check_text(data, field)
    elif isinstance(data, dict):
        for key, value in data.items():
            check_text(key, field)
            _check_strings(value, key)
    elif isinstance(data, list):
        for item in data:
            _check_strings(item, field)


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise InvalidInput("body", f"key {_shown(key)!r} appears more than once")
        found[key] = value
    return found


def _no_constant(name: str) -> Any:
    raise InvalidInput("body", f"{name} is not JSON")


@attrs.frozen
class Response:
    """One answer. ``chunks``, when set, is the body instead of ``body``: an iterator of
    bytes the adapter sends as it is produced (chunked), so an answer of any size -- the
    unpaged GET /invoices, the accounting export -- costs the server one chunk of memory,
    not the whole."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: Mapping[str, str] = attrs.field(factory=dict)
    #: A body made while it is sent (the unpaged GET /invoices), so that it never sits in
    #: memory whole; ``body`` is then empty. Adapters that stream send these pieces as they
    #: come (``paycore.api.handle_streamed``); ``joined`` makes an ordinary response of it.
    chunks: Iterable[bytes] | None = attrs.field(default=None, eq=False, repr=False)
    #: An open event stream (GET /invoice/{guid}/events): the adapter lets it in with
    #: ``paycore.api.streams.for_server`` and sends it as its server can, in a thread
    #: (``sync_chunks``) or on its event loop (``async_chunks``).
    stream: EventStream | None = attrs.field(default=None, eq=False, repr=False)

    def joined(self) -> Response:
        """The whole body in ``body``; an event stream gives its first message only, and
        is closed (a caller that cannot stream gets the invoice as it is)."""
        if self.stream is not None:
            opening = self.stream.opening()
            self.stream.close()
            return attrs.evolve(self, body=opening, stream=None)
        if self.chunks is None:
            return self
        return attrs.evolve(self, body=b"".join(self.chunks), chunks=None)


def json_response(
    data: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(status, json_bytes(data), "application/json", dict(headers or {}))


#: Bytes a streamed JSON array gathers before it hands a piece to the server.
STREAM_PIECE = 64 * 1024


def json_array_stream(items: Iterable[Any]) -> Response:
    """A 200 JSON array sent item by item: byte for byte what ``json_response(list(items))``
    would send, without ever holding the list. ``items`` is read as the body is sent."""

    def pieces() -> Iterator[bytes]:
        buffer = bytearray(b"[")
        try:
            for n, item in enumerate(items):
                if n:
                    buffer += b","
                buffer += json.dumps(item, separators=(",", ":"), ensure_ascii=False).encode()
                if len(buffer) >= STREAM_PIECE:
                    yield bytes(buffer)
                    buffer.clear()
        except Exception as exc:
            first = redact(str(exc).strip().split("\n", 1)[0])
            log.error("streamed answer cut short: %s: %s", type(exc).__name__, first)
            raise StreamAborted(type(exc).__name__) from exc
        buffer += b"]"
        yield bytes(buffer)

    return Response(200, b"", "application/json", {}, chunks=pieces())


def text_response(text: str, status: int) -> Response:
    return Response(status, text.encode(), "text/plain; charset=utf-8")
