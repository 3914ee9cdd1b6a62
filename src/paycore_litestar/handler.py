"""Paycore's route handlers: copy Litestar's request into a paycore Request, and back.

Each row of the route table gets a handler of its own, named ``paycore.<route name>``
(``paycore.create_invoice``), with the row's methods and its OpenAPI operation; hosts see,
guard and rate-limit each one. The other methods of those paths and every other path reach
fallback handlers, so paycore's own 404/405 texts answer them. Every handler calls
``paycore.api.handle_streamed`` and nothing else: what an endpoint decides happens there.
The handlers are async for one reason: the body is read with a cap as it streams in, which
needs ``await``. The core call itself is blocking and runs in a worker thread (anyio's pool,
the one ``sync_to_thread=True`` uses), except on the rows marked ``inline``, whose requests
the core answers on the loop where nothing would wait; their GETs and POSTs reach a
middleware first that answers without Litestar's request and response objects where no host
code would see them (``paycore_litestar.direct``).
"""

from __future__ import annotations

import re
import typing
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from anyio import to_thread
from litestar import Request, Router, route
from litestar import Response as LitestarResponse
from litestar.enums import HttpMethod
from litestar.handlers import BaseRouteHandler, HTTPRouteHandler
from litestar.openapi.spec import Operation
from litestar.response import Stream
from litestar.types import Guard, Method, Middleware, OperationIDCreator
from litestar.types.internal_types import PathParameterDefinition

from paycore import Gateway
from paycore.api import (
    MAX_BODY,
    Route,
    handle_inline_async,
    handle_streamed,
    reads_inline,
    reads_inline_async,
    routes,
)
from paycore.api import Response as PaycoreResponse
from paycore.api.http import text_response
from paycore.api.openapi import operation, operation_id
from paycore.api.streams import for_server
from paycore.errors import PayloadTooLarge

from .direct import direct_answers
from .request import scope_request
from .ws import websocket_handler

#: Every method reaches paycore, which answers 404/405 itself with its own one-line texts.
METHODS = [
    HttpMethod.GET,
    HttpMethod.POST,
    HttpMethod.PUT,
    HttpMethod.PATCH,
    HttpMethod.DELETE,
    HttpMethod.HEAD,
    HttpMethod.OPTIONS,
    HttpMethod.TRACE,
]
AnyRequest = Request[Any, Any, Any]
#: The key of each paycore handler's ``opt`` holding its route's name (``create_invoice``):
#: what an app-wide guard or middleware reads to single out a paycore endpoint.
ROUTE_OPT = "paycore_route"
NAME_PREFIX = "paycore."


def build_router(
    prefix: str,
    gateway: Gateway,
    guards: Mapping[str, Sequence[Guard]] | None = None,
    *,
    router_guards: Sequence[Guard] = (),
    middleware: Sequence[Middleware] = (),
) -> Router:
    """A Router under ``prefix``: one handler per row of the route table, fallbacks, and the
    WebSocket handler. ``guards`` maps handler names (``"paycore.create_invoice"``) to
    guards of that handler only (and of its HEAD twin); ``router_guards`` and
    ``middleware`` apply to every handler of the Router, and so to no host route.

    ``request_max_body_size=None`` switches Litestar's own limit off for these routes only:
    our cap (and our 413 text) must win, and Litestar's would raise through the host's
    exception handlers.
    """
    rows = routes()
    guards = dict(guards or {})
    # A name with no handler (a typo, or /checkout, which /checkout/'s handler takes) would
    # guard nothing: refused rather than left open.
    unknown = set(guards) - {NAME_PREFIX + row.name for row in own_handlers(rows)}
    if unknown:
        raise ValueError(f"no paycore handler is named {', '.join(sorted(unknown))}")
    schema = operation_class(rows, tuple(gateway.settings.chains))
    # PostgreSQL: the inline route's read is awaited on the loop (handle_inline_async);
    # a store whose read does not block (a SQLite file) answers as it is.
    inline = reads_inline(gateway) or reads_inline_async(gateway)
    handlers: list[BaseRouteHandler] = []
    taken: dict[str, set[str]] = {}
    for row in rows:
        path = litestar_path(row.path).rstrip("/") or "/"  # Litestar ignores a trailing /
        methods = [m for m in row.methods if m not in taken.setdefault(path, set())]
        if not methods:
            # /checkout/ and /checkout are one path to Litestar: the first row's handler
            # takes both, and the core tells them apart by the path the client sent.
            continue
        taken[path].update(methods)
        row_guards = list(guards.get(NAME_PREFIX + row.name, ()))
        handlers.append(
            route(
                path,
                http_method=[HttpMethod(m) for m in methods],
                name=NAME_PREFIX + row.name,
                summary=row.summary,
                operation_class=schema,
                operation_id=operation_ids(row),
                guards=row_guards,
                opt={ROUTE_OPT: row.name},
                status_code=row.status,
                request_max_body_size=None,
                # An inline row's GET and POST answered without Litestar's request and
                # response objects where no host code would see them
                # (paycore_litestar.direct).
                middleware=[direct_answers(gateway, prefix)] if row.inline and inline else None,
            )(core_call(gateway, prefix, inline=row.inline and inline))
        )
        if "GET" in methods and "HEAD" not in taken[path]:
            taken[path].add("HEAD")  # paycore answers HEAD as GET: guarded alike, not listed
            head = f"{NAME_PREFIX}{row.name}.head"
            handlers.append(_plain(path, ["HEAD"], head, gateway, prefix, row_guards, row.name))
    # Each path's fallback goes first: registered after a row, its OPTIONS would clash with
    # the one Litestar adds to a path that has none.
    fallbacks: list[BaseRouteHandler] = [
        _plain(
            path,
            [m for m in METHODS if m not in methods],
            f"{NAME_PREFIX}other:{path}",
            gateway,
            prefix,
        )
        for path, methods in taken.items()
    ]
    # Litestar does not backtrack out of a path it has entered (/invoice/a/b is not tried
    # against /{subpath:path} once /invoice/{guid} took "a"): below each path, a catch-all.
    # Every path and every ancestor of one gets a catch-all below it, ancestors that are no
    # row's path one of their own too.
    ancestors = {
        "/" + "/".join(parts[:n])
        for path in taken
        for parts in [path.strip("/").split("/")]
        for n in range(1, len(parts))
    } - set(taken)
    # Not below a path with a parameter child: Litestar would prefer the catch-all to it.
    templated = {path.rsplit("/", 1)[0] for path in taken if path.endswith(":str}")}
    below = sorted(
        p.rstrip("/") + "/{rest:path}" for p in {*taken, *ancestors} if p not in templated
    )
    fallbacks.append(
        _plain(
            ["/", "/{subpath:path}", *sorted(ancestors), *below],
            METHODS,
            "paycore",
            gateway,
            prefix,
        )
    )
    return OneAppRouter(
        prefix or "/",
        route_handlers=[*fallbacks, *handlers, websocket_handler(gateway)],
        guards=list(router_guards),
        middleware=list(middleware),
    )


class OneAppRouter(Router):
    """A Router made for one app: registering it does not deep-copy it.

    Litestar copies a Router on registration so that one instance can be mounted twice;
    ``build_router`` makes a new one for each app, so the copy (some 40 ms for paycore's
    hundred-odd handlers, most of an app's start-up) buys nothing. Registered twice, it
    would be shared: that is refused."""

    _registered = False

    def __deepcopy__(self, memo: dict[int, Any]) -> OneAppRouter:
        if self._registered:
            raise RuntimeError("a paycore Router serves one app: build another for a second")
        self._registered = True
        return self


def own_handlers(rows: Iterable[Route]) -> list[Route]:
    """The rows that get a handler of their own: not one whose path and methods Litestar
    already gives an earlier row (it ignores a trailing slash: /checkout is /checkout/)."""
    seen: set[tuple[str, str]] = set()
    found: list[Route] = []
    for row in rows:
        keys = {(litestar_path(row.path).rstrip("/") or "/", m) for m in row.methods}
        if not keys <= seen:
            found.append(row)
        seen |= keys
    return found


def _plain(
    path: str | list[str],
    methods: Iterable[str],
    name: str,
    gateway: Gateway,
    prefix: str,
    guards: Sequence[Guard] = (),
    route_name: str | None = None,
) -> HTTPRouteHandler:
    """A handler left out of the schema: HEAD of a GET row, and the fallbacks that give the
    core every other method and path (Litestar would answer those 404/405 itself)."""
    return route(
        path,
        http_method=[HttpMethod(m) for m in methods],
        name=name,
        include_in_schema=False,
        guards=list(guards),
        opt={ROUTE_OPT: route_name} if route_name else None,
        status_code=200,  # Litestar's default for a lone DELETE (204) forbids a body
        request_max_body_size=None,
    )(core_call(gateway, prefix))


def core_call(
    gateway: Gateway, prefix: str, *, inline: bool = False
) -> Callable[[AnyRequest], Coroutine[Any, Any, LitestarResponse[Any]]]:
    """A fresh handler function (Litestar keeps per-function state) making the one core call.

    A GET or HEAD is read without its body (paycore never reads a GET's body); for a row
    marked ``inline`` the core answers it on the event loop when it can do so without
    waiting (``paycore.api.handle_inline``: the checkout page's poll, and on a SQLite file
    a signed read or a signed ``POST /invoice``), with no hop to a worker thread and back;
    on PostgreSQL a poll's read is awaited on the loop first
    (``paycore.api.handle_inline_async`` decides which)."""

    async def paycore_handler(request: AnyRequest) -> LitestarResponse[Any]:
        if request.method in _BODILESS:
            plain = scope_request(request.scope, prefix)
            if inline:
                answered = await handle_inline_async(gateway, plain)
                if answered is not None:
                    return to_litestar(answered)
            return to_litestar(await to_thread.run_sync(handle_streamed, gateway, plain))
        body = await read_capped_body(request)
        if body is None:
            return to_litestar(payload_too_large())
        plain = scope_request(request.scope, prefix, body)
        if inline:  # a signed write, all or nothing on the loop where the store allows it
            written = await handle_inline_async(gateway, plain)
            if written is not None:
                return to_litestar(written)
        return to_litestar(await to_thread.run_sync(handle_streamed, gateway, plain))

    # The annotations as objects, not the strings this module's future import makes them:
    # Litestar resolves each handler's on registration, and evaluating the strings again
    # for each of the ~200 handlers was a fifth of an app's build.
    paycore_handler.__annotations__ = _HANDLER_ANNOTATIONS
    return paycore_handler


_BODILESS = frozenset(("GET", "HEAD"))
_HANDLER_ANNOTATIONS: dict[str, Any] = {"request": AnyRequest, "return": LitestarResponse[Any]}


def operation_ids(row: Route) -> OperationIDCreator:
    """Litestar asks a handler for each method's operation id: paycore's, which is also
    how :class:`PaycoreOperation` finds the fragment to show."""

    def creator(
        _handler: HTTPRouteHandler, method: Method, _path: list[str | PathParameterDefinition]
    ) -> str:
        return operation_id(row, HttpMethod(method).value)

    return creator


def litestar_path(path: str) -> str:
    """``/invoice/{guid}`` -> ``/invoice/{guid:str}``: Litestar types its path parameters."""
    return re.sub(r"\{(\w+)\}", r"{\1:str}", path)


@dataclass
class PaycoreOperation(Operation):
    """An operation whose schema is paycore's own fragment (``paycore.api.openapi``), the
    one ``{prefix}/openapi.json`` serves: Litestar's document then describes each paycore
    endpoint's parameters, body and answers, not the adapter's ``request`` argument."""

    fragments: ClassVar[Mapping[str, dict[str, Any]]] = {}

    def to_schema(self) -> dict[str, Any]:
        found = self.fragments.get(self.operation_id or "")
        return dict(found) if found is not None else super().to_schema()


def operation_class(rows: Iterable[Route], chains: Sequence[int]) -> type[Operation]:
    """A :class:`PaycoreOperation` holding the fragments of ``rows`` by operation id (chain
    ids are the gateway's, as in ``{prefix}/openapi.json``)."""
    fragments = {
        operation_id(row, method): operation(row, method, chains)
        for row in rows
        for method in row.methods
    }
    return type("PaycoreOperation", (PaycoreOperation,), {"fragments": fragments})


async def read_capped_body(request: AnyRequest) -> bytes | None:
    """The body, or ``None`` once it is known to exceed MAX_BODY.

    A declared content-length over the limit is refused before anything is received; a
    streamed body is dropped as soon as it passes the limit.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        return None
    chunks: list[bytes] = []
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def payload_too_large() -> PaycoreResponse:
    """The core's own 413 answer, so the text is paycore's and not Litestar's."""
    return text_response(PayloadTooLarge(MAX_BODY).text, PayloadTooLarge.status)


def to_litestar(response: PaycoreResponse) -> LitestarResponse[Any]:
    """Status, body, content type and headers copied as is.

    The content type goes in as a header too: Litestar would otherwise append its own
    ``; charset=`` to a ``text/*`` type that already has one. A streamed body becomes a
    ``Stream`` fed by :func:`in_threads`, whose pieces are made in a worker thread, as the
    rest of the call.
    """
    response = for_server(response, threaded=False)
    headers = {**response.headers, "content-type": response.content_type}
    if response.stream is not None:  # an event stream: a coroutine on the loop, no thread
        return Stream(
            response.stream.async_chunks(),
            status_code=response.status,
            media_type=response.content_type,
            headers=headers,
        )
    if response.chunks is not None:
        return Stream(
            in_threads(response.chunks),
            status_code=response.status,
            media_type=response.content_type,
            headers=headers,
        )
    return LitestarResponse(
        content=response.body,
        status_code=response.status,
        media_type=response.content_type,
        headers=headers,
    )


async def in_threads(chunks: Iterable[bytes]) -> AsyncIterator[bytes]:
    """Each chunk produced in a worker thread (producing one reads storage, which blocks).

    Not Litestar's own wrapper for sync iterators: it ends the stream quietly on a
    ``ValueError`` raised by the iterator, and a stream cut short by an error must end
    broken (no last chunk), never look complete."""
    iterator = iter(chunks)
    done = object()
    while True:
        chunk = await to_thread.run_sync(next, iterator, done)
        if chunk is done:
            return
        yield typing.cast(bytes, chunk)
