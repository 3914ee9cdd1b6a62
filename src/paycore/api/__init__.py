"""The HTTP interface, framework-free: a route table and one ``handle`` call for adapters."""

from __future__ import annotations

import logging
import time
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import TYPE_CHECKING

import anyio
from anyio import to_thread

from ..errors import PaycoreError, StorageUnavailable
from ..storage.invoice_read import WouldBlock, spending_inline, without_blocking
from .http import MAX_BODY, Request, Response, text_response
from .routing import Route, Router, dispatch, storage_unavailable
from .table import ROUTES, build_router

if TYPE_CHECKING:
    from ..auth.session import SignedRequest
    from ..domain.records import SessionKey
    from ..gateway import Gateway
    from ..storage.request_unit import Recorded

_router: Router | None = None
log = logging.getLogger("paycore.api")
#: Set in a request's context once an event loop tried its one-statement creation
#: (``_signed_create_async``), which the thread it then goes to must not try again: what
#: failed there fails the same on the thread, at the cost of a second dispatch.
_LOOP_TRIED: ContextVar[bool] = ContextVar("paycore-loop-tried-creation", default=False)


def handle(gateway: Gateway, request: Request) -> Response:
    """Answer one request with its whole body in ``Response.body``."""
    return handle_streamed(gateway, request).joined()


def routes() -> list[Route]:
    """Every row the dispatcher routes (the table and ``/openapi.json``): what adapters give
    a framework route each, so hosts see, guard and rate-limit each endpoint."""
    return list(_shared_router().routes)


def handle_streamed(gateway: Gateway, request: Request) -> Response:
    """Answer one request: what every adapter route calls, and all it calls. A large body
    may come as ``Response.chunks`` (made while it is sent), for adapters to stream.

    The route is matched here again even when the framework already picked a row: the
    dispatcher stays the one judge of paths, methods and 404/405 texts under every host.

    A signed ``POST /invoice`` on a store that writes a creation in one call
    (``Gateway.creates_at_once``: PostgreSQL) is first tried that way (``_signed_create``),
    unless an event loop tried it already for this request (``_LOOP_TRIED``)."""
    if (
        gateway.creates_at_once
        and request.sends_session
        and not _LOOP_TRIED.get()
        and _creates(request)
    ):
        answered = _signed_create(gateway, request)
        if answered is not None:
            return answered
    return dispatch(gateway, _shared_router(), request)


def handle_inline(gateway: Gateway, request: Request) -> Response | None:
    """The answer made on the calling thread -- an event loop's -- for a route marked
    ``inline``, or ``None``: then the adapter calls :func:`handle_streamed` in a worker
    thread as for any other request. ``None`` also when the answer would have to wait
    after all (an expiry to write, no idle pooled connection, another process writing):
    nothing was done, the thread does it all.

    A request with session headers is made inline only where the store spends its nonce
    all or nothing on a loop (``Gateway.spends_inline``: a SQLite file): the signature is
    checked here, and the request's storage commits only when nothing is left to wait for
    (``spending_inline``: a read's spend with a read that needs nothing more written; a
    write's one transaction, begun only if no other writer holds the lock), so a request
    sent on to the thread never has its nonce spent. The hop to a thread and back cost a
    signed request more CPU than its fsync waits. An unsigned write always goes to the
    thread.

    Only for an adapter that knows the request is for such a route (Litestar's handler
    per row); the answer is the one :func:`handle_streamed` would give."""
    if request.sends_session:
        if not gateway.spends_inline:
            return None
        try:
            with spending_inline(gateway.invoice_views.settles):
                return dispatch(gateway, _shared_router(), request)
        except WouldBlock:
            return None
    if request.method not in ("GET", "HEAD"):
        return None
    try:
        with without_blocking():
            return dispatch(gateway, _shared_router(), request)
    except WouldBlock:
        return None


async def handle_inline_async(gateway: Gateway, request: Request) -> Response | None:
    """:func:`handle_inline` for a store whose read is a round trip (PostgreSQL): the
    route's one read of its invoice is awaited first, on the loop
    (``Storage.read_invoice_async``), then :func:`handle_inline` runs on it
    (``Gateway.with_prefetched_read``) -- the same sync rules (lazy expiry, ETag and 304,
    404, the answer's bytes), with the wait moved out of them. ``None`` as there (an
    expiry to write, a second read): the adapter answers in a worker thread; also when
    the async read cannot answer (the database unreachable, a connection broken), so the
    thread's own read and its error texts decide. A store without the async read:
    :func:`handle_inline` as it is."""
    if request.sends_session:
        if gateway.spends_async:
            return await _signed_read_async(gateway, request)
        if gateway.spends_inline:
            await _writers_turn(gateway)
        return handle_inline(gateway, request)  # a spend on the loop, where it waits for nothing
    guid = _inline_read_of(request) if gateway.reads_invoices_async else None
    if guid is None:
        return handle_inline(gateway, request)
    try:
        read = await gateway.read_invoice_async(guid)
    except (WouldBlock, StorageUnavailable):
        return None
    except Exception:  # a bug here must not cost the poll its answer: the thread's path
        # No path in the line: the guid in it opens the invoice's checkout page.
        log.exception("async invoice read failed; the poll is answered on a thread")
        return None
    with gateway.with_prefetched_read(guid, read):
        return handle_inline(gateway, request)


#: How long (seconds) a signed request waits on the loop for this process's writer, looking
#: every ``_TURN_STEP``, before it goes to a worker thread like any request that cannot be
#: made on the loop: a few of a thread's write transactions.
_TURN_WAIT = 0.005
_TURN_STEP = 0.0002


async def _writers_turn(gateway: Gateway) -> None:
    """Wait, on the loop and without blocking it, while a worker thread of this process
    holds the writer a signed request made on the loop needs (a SQLite file's), up to
    ``_TURN_WAIT``. Without the wait such a request found the writer taken and went to a
    thread too, where it took the writer in turn while the next request arrived: under
    steady concurrent creations a quarter of them ended on threads, each paying the hop
    and its signature's check twice (docs/performance.md, "Seventh sitting")."""
    if gateway.inline_turn_free():
        return
    deadline = time.monotonic() + _TURN_WAIT
    while time.monotonic() < deadline:
        await anyio.sleep(_TURN_STEP)
        if gateway.inline_turn_free():
            return


async def _signed_read_async(gateway: Gateway, request: Request) -> Response | None:
    """A signed ``GET /invoice/{guid}`` on a store that spends and reads on a loop
    (PostgreSQL): the signature checked (the key recovered; nothing stored), the spend and
    the read awaited as one statement (``Gateway.spend_and_read_async``), then the sync
    rules run on what it returned (``Gateway.with_prefetched_spend``): on the loop when
    they need nothing more from storage, else in a worker thread -- with the same spend,
    never a second one, so the request is never refused as a replay of itself.

    ``None`` (the adapter's thread answers the request whole, nothing having been spent)
    for any other request, and for a request refused before its spend: its query or its
    signature (the thread gives the refusal's text). An outage during the spend answers
    503, as the sync path does, since the spend may have been made."""
    guid = _inline_read_of(request)
    if guid is None:
        if gateway.creates_async and _creates(request):
            return await _signed_create_async(gateway, request)
        return handle_inline(gateway, request)
    try:
        request.json()  # the query's check, which the dispatcher makes before the spend
    except PaycoreError:
        return None
    signed = _signed(gateway, request)
    if signed is None:
        return None
    try:
        key, read = await gateway.spend_and_read_async(signed, guid)
    except WouldBlock:
        return None  # nothing was sent
    except StorageUnavailable as exc:
        return storage_unavailable(gateway, exc)
    except Exception:  # the spend's fate unknown: answered as dispatch answers a bug
        log.exception("async signed read failed")
        return text_response("internal error", 500)

    # A refused nonce's text reads the stored key: a transaction, for a thread.
    def checked() -> AbstractContextManager[None]:  # once on the loop, once on a thread
        return gateway.sessions.already_checked(request.headers, request.body, request.uri, signed)

    if key is not None:
        with checked(), gateway.with_prefetched_spend(signed, key, guid, read):
            try:
                with without_blocking():
                    return dispatch(gateway, _shared_router(), request)
            except WouldBlock:
                pass  # an expiry to write: the thread makes it, on the same spend

    def on_thread() -> Response:
        with checked(), gateway.with_prefetched_spend(signed, key, guid, read):
            return handle_streamed(gateway, request).joined()

    return await to_thread.run_sync(on_thread)


async def _signed_create_async(gateway: Gateway, request: Request) -> Response | None:
    """A signed ``POST /invoice`` on a store that makes a creation's writes as one
    statement on a loop (PostgreSQL): the request dispatched on the loop with its storage
    recorded (:func:`_recorded_creation`), then the spend, the invoice and its count made as
    one statement guarded on the key expected (``Gateway.create_recorded_async``); the
    answer the dispatcher made is sent only once it has committed. The same sync rules
    make the invoice and the answer; only the writes are gathered.

    ``None`` -- nothing written, the adapter's thread answers the whole request, without
    trying this again (``_LOOP_TRIED``) -- whenever :func:`_recorded_creation` gives
    nothing, for a nonce the statement refused, a key changed since it was seen, and a
    statement that failed whole. An outage during the statement answers 503, as the sync
    path does."""
    _LOOP_TRIED.set(True)
    made = _recorded_creation(gateway, request)
    if made is None:
        return None
    signed, recorded, response = made
    try:
        key = await gateway.create_recorded_async(signed, recorded)
    except Exception as exc:
        return _not_created(gateway, exc)
    return _created(recorded, response, key)


def _signed_create(gateway: Gateway, request: Request) -> Response | None:
    """:func:`_signed_create_async` on the request's own thread, for a sync host (Flask
    under its WSGI server) on a store that makes the writes in one call
    (``Gateway.create_recorded``): one round trip where the request's transaction made
    five. ``None`` in the same cases, with nothing written: the dispatcher then answers."""
    made = _recorded_creation(gateway, request)
    if made is None:
        return None
    signed, recorded, response = made
    try:
        key = gateway.create_recorded(signed, recorded)
    except Exception as exc:
        return _not_created(gateway, exc)
    return _created(recorded, response, key)


def _recorded_creation(
    gateway: Gateway, request: Request
) -> tuple[SignedRequest, Recorded, Response] | None:
    """The request's signature checked and the request dispatched with its storage
    recorded (``Gateway.recording``) against the key this process last spent for the
    signer: what it proved, what it would write, and the answer to send once written.
    None -- nothing written -- for a key not seen yet, a request that needs any other
    storage call (a derived address, a rate lock, a proof of work, an ``Idempotency-Key``)
    or is refused (its text is the ordinary path's to give, in the order it finds it)."""
    signed = _signed(gateway, request)
    if signed is None:
        return None
    expect = gateway.known_session_key(signed.address)
    if expect is None:
        return None
    checked = gateway.sessions.already_checked(request.headers, request.body, request.uri, signed)
    try:
        with checked, gateway.recording(signed, expect) as recorded, without_blocking():
            response = dispatch(gateway, _shared_router(), request)
    except WouldBlock:
        return None
    if not recorded.complete or response.status >= 300:
        return None
    return signed, recorded, response


def _not_created(gateway: Gateway, exc: Exception) -> Response | None:
    """The answer when the one-call creation raised: 503 for an outage (the statement may
    have committed), else None (nothing was written: the ordinary path answers)."""
    if isinstance(exc, StorageUnavailable):
        return storage_unavailable(gateway, exc)
    if not isinstance(exc, WouldBlock):  # rolled back whole by the database
        # The error's class only: its text may quote the invoice's values.
        log.warning("signed creation in one statement failed (%s)", type(exc).__name__)
    return None


def _created(recorded: Recorded, response: Response, key: SessionKey | None) -> Response | None:
    """``response`` once the writes committed (``key``: the key as spent), what waited on
    the commit run; None when the statement refused them (nothing was written)."""
    if key is None:
        return None
    recorded.run_after()
    return response


def _signed(gateway: Gateway, request: Request) -> SignedRequest | None:
    """What the request's signature proves (the key recovered; nothing stored), or None
    when it proves nothing: unsigned, or refused (the thread gives the refusal's text)."""
    try:
        return gateway.sessions.check(
            method=request.method, uri=request.uri, body=request.body,
            headers=request.headers, required=False,
        )  # fmt: skip
    except PaycoreError:
        return None


def _creates(request: Request) -> bool:
    """Whether ``request`` is for a ``signed_create`` route."""
    try:
        route, _params = _shared_router().match(request.method, request.path)
    except PaycoreError:
        return False
    return route.signed_create


def _inline_read_of(request: Request) -> str | None:
    """The invoice an ``inline`` route reads (its ``signed_read_of`` parameter: the one
    read of ``GET /invoice/{guid}``, signed or not), or None: no such route matched, or a
    path the router refuses (its error is the sync path's to give)."""
    try:
        route, params = _shared_router().match(request.method, request.path)
    except PaycoreError:
        return None
    if not route.inline or route.signed_read_of is None:
        return None
    return params.get(route.signed_read_of)


def reads_inline(gateway: Gateway) -> bool:
    """Whether :func:`handle_inline` is worth trying on ``gateway``: not when its database
    is PostgreSQL, whose every read is a round trip an event loop must not wait out (the
    attempt would end in ``WouldBlock`` after routing the request for nothing; an async
    adapter tries :func:`handle_inline_async` there, see :func:`reads_inline_async`). Only
    a hint: a store that cannot answer inline still refuses, and a thread then answers."""
    return not gateway.settings.database_url.startswith("postgres")


def reads_inline_async(gateway: Gateway) -> bool:
    """Whether an async adapter should answer ``inline`` routes with
    :func:`handle_inline_async`: its store has ``read_invoice_async``."""
    return gateway.reads_invoices_async


def _shared_router() -> Router:
    global _router
    if _router is None:
        _router = build_router()
    return _router


__all__ = [
    "MAX_BODY",
    "ROUTES",
    "Request",
    "Response",
    "Route",
    "Router",
    "build_router",
    "handle",
    "handle_inline",
    "handle_inline_async",
    "handle_streamed",
    "reads_inline",
    "reads_inline_async",
    "routes",
]
