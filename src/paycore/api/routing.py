"""The route table's machinery: Route, Call, and the dispatcher every adapter calls.

One function, :func:`dispatch`, decides everything about a request that is not the endpoint's
own business: body size, route and method matching, session-header verification, the owner
scope, response encryption, and turning typed errors into one-line text bodies. Adapters call
it once per request, so Flask and Litestar cannot drift apart.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, TypeVar, cast

import attrs

from ..domain.records import SessionKey
from ..domain.tokens import normalize_owner
from ..errors import (
    AuthError,
    Forbidden,
    InvalidInput,
    PaycoreError,
    PayloadTooLarge,
    StorageUnavailable,
)
from ..ops.idempotency import check_key
from . import wire
from .http import MAX_BODY, Request, Response, check_text, json_response, text_response

if TYPE_CHECKING:
    from ..gateway import Gateway

log = logging.getLogger("paycore.api")
T = TypeVar("T")

#: What ``auth_mode = "soft"`` allows on a route (docs/decisions.md, "What soft mode allows"),
#: one value per row of the route table, with no default: a new endpoint states its own.
#:
#: - ``claimed``: soft mode takes the owner the request names (reads, and invoice creation
#:   as docs/interface.md allows); strict mode needs the owner's session.
#: - ``session``: the call changes an owner's state, so it needs the owner's session in every
#:   mode; a merely claimed owner is a 401.
#: - ``signed``: the request proves its owner itself (a wallet or salt signature in the body,
#:   a poll token), in both modes alike; soft mode changes nothing.
#: - ``public``: nobody's owner-scoped state: anyone may call it, in both modes.
SOFT_MODES = ("claimed", "session", "signed", "public")


@attrs.frozen
class Call:
    """What a handler gets: the gateway, the request, path parameters and the verified caller."""

    gateway: Gateway
    request: Request
    params: Mapping[str, str]
    caller: SessionKey | None
    #: The body already read as the route's request class, outside the transaction.
    ahead: ReadAhead | None = None

    def owner_scope(self, claimed: object, field: str = "owner") -> str:
        """The owner this call may act for.

        With a session: its owner, and ``claimed`` (when given) must be the same one. Without:
        a 401 in strict mode; in soft mode the claimed owner, which is then required.
        """
        if self.caller is not None:
            if claimed is not None and normalize_owner(claimed, field) != self.caller.owner:
                raise Forbidden(f"{field} does not match the session key's owner")
            return self.caller.owner
        if self.gateway.settings.auth_mode == "strict":
            raise AuthError("missing x-session-nonce and x-session-signature headers")
        if claimed is None:
            raise InvalidInput(field, "required")
        return normalize_owner(claimed, field)

    def session(self) -> SessionKey:
        """The verified session key, for calls that must never run on a claimed owner."""
        if self.caller is None:
            raise AuthError("missing x-session-nonce and x-session-signature headers")
        return self.caller

    def body(self) -> dict[str, Any]:
        return self.request.json()

    def checkout_url(self) -> str:
        """The checkout page's address as this request resolves it (``public_url`` or the
        address it came in at, under the mount prefix): what an invoice made now keeps."""
        return self.gateway.checkout_url_for(self.request.root_url, self.request.prefix)

    def read(self, cls: type[T]) -> T:
        """The request's parameters as ``cls`` (``paycore.api.requests``): the query of a
        GET, the JSON body of a POST, each field parsed once; a 400 names the first bad one."""
        ahead = self.ahead
        if ahead is not None and ahead.cls is cls:
            if ahead.error is not None:
                raise ahead.error
            return cast(T, ahead.value)
        return wire.read(cls, self.request.json(), query=self.request.reads_uri)


@attrs.frozen
class ReadAhead:
    """A POST body read as its route's request class before the request's transaction
    opened (:func:`_read_ahead`), or the error reading it raised, which the handler's
    ``Call.read`` raises in its place -- after the session check, as it always was."""

    cls: type
    value: Any
    error: PaycoreError | None


Handler = Callable[[Call], Any]


@attrs.frozen
class Route:
    methods: tuple[str, ...]
    path: str
    handler: Handler
    summary: str
    status: int = 200
    #: What the handler reads (``paycore.api.requests``): its query on GET, its JSON body on
    #: POST. The OpenAPI document is generated from the same class.
    request: type | None = None
    #: OpenAPI fragments of the answer, kept next to the route so the document cannot drift.
    response: Mapping[str, Any] | None = None
    errors: Sequence[int] = ()
    session: str = "optional"  # "owner" (per auth_mode), "optional", or "none" (body-signed)
    #: What a success answer is, for the OpenAPI document (the checkout page is not JSON).
    media_type: str = "application/json"
    #: Whether a session-signed POST may have an empty body: only where docs/interface.md
    #: has clients sign one (POST /poll/events). A POST signature does not name its endpoint, so
    #: elsewhere the empty body every poll signs must not be spendable.
    signed_empty_body: bool = False
    #: Never encrypt the answer, even for a caller with an encryption key: for the one route
    #: whose request may be changing that very key, and whose answer holds nothing private.
    plain_answer: bool = False
    #: Spend a signed request's nonce and run the handler in one storage transaction (one
    #: commit instead of two; docs/decisions.md, "One transaction per request"). Only for
    #: handlers that do nothing slow inside it, since the key's row stays locked meanwhile.
    one_transaction: bool = False
    #: A creating write that honours an ``Idempotency-Key`` header (docs/decisions.md,
    #: "Idempotency keys"): with one, the request runs in one transaction that also stores
    #: its answer, and a retry with the same key and request gets that answer again.
    idempotent: bool = False
    #: What soft mode allows here (:data:`SOFT_MODES`). ``None`` only until classified: the
    #: router refuses to serve an unclassified route, so a new write cannot skip the rule.
    soft_mode: str | None = None
    #: The per-client-IP limit this route counts against (``paycore.ops.limits``:
    #: "challenge", "registration"), for unauthenticated writes; None: no such limit.
    ip_limit: str | None = None
    #: The answer carries an ``ETag`` and a request naming it in ``If-None-Match`` is
    #: answered ``304`` with no body (the OpenAPI document says so).
    conditional: bool = False
    #: The request may be answered on the server's event loop, with no hop to a worker
    #: thread (``paycore.api.handle_inline``): an unsigned GET's handler makes one read
    #: that never waits, and raises ``WouldBlock`` where it would (then a thread
    #: answers); a signed request's storage calls are all or nothing there, where the
    #: store allows it (``spending_inline``).
    inline: bool = False
    #: The path parameter naming the invoice the handler reads first, if any: a signed
    #: request's nonce is then spent and that invoice read in one storage call
    #: (``Gateway.reading_along``), not two.
    signed_read_of: str | None = None
    #: A signed creation of one invoice (``POST /invoice``): on a store that makes a
    #: creation's writes as one statement on an event loop, the handler runs there with
    #: its writes recorded, then they are made at once (``paycore.api.handle_inline_async``).
    signed_create: bool = False

    @property
    def name(self) -> str:
        """The route's stable name, for adapters that give each row a framework route of its
        own (``paycore.create_invoice`` in Flask's ``url_map``, a Litestar handler's name):
        what a host guards or rate-limits one endpoint by. The handler's name, prefixed with
        its module's when it is a bare verb (``webhooks_get``), so names stay unique and
        say what they serve without a hand-kept list."""
        handler = self.handler.__name__.strip("_")
        if "_" in handler:
            return handler
        return self.handler.__module__.rsplit(".", 1)[-1] + "_" + handler

    @property
    def pattern(self) -> re.Pattern[str]:
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", self.path)
        return re.compile(regex)


@attrs.define
class Router:
    routes: list[Route]
    _compiled: list[tuple[re.Pattern[str], Route]] = attrs.field(init=False)
    _by_first: dict[str, list[tuple[re.Pattern[str], Route]]] = attrs.field(init=False)
    _any_first: list[tuple[re.Pattern[str], Route]] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        unclassified = [r.path for r in self.routes if r.soft_mode not in SOFT_MODES]
        if unclassified:
            raise ValueError(
                f"routes without a soft_mode ({', '.join(SOFT_MODES)}): {', '.join(unclassified)}"
            )
        # Literal paths before templated ones: /invoice/challenge is that route, never the
        # invoice "challenge" of /invoice/{guid}, whatever the method.
        ordered = sorted(self.routes, key=lambda r: "{" in r.path)
        self._compiled = [(r.pattern, r) for r in ordered]
        # The rows whose first path segment could be a path's, in the same order: a
        # request tries a handful of patterns, not every row's (58 tries were a tenth of
        # a signed GET's CPU). A row whose first segment is a parameter joins every list.
        firsts = {_first_segment(r.path) for r in ordered}
        self._by_first = {
            first: [
                (pattern, r)
                for pattern, r in self._compiled
                if _first_segment(r.path) in (first, None)
            ]
            for first in firsts
            if first is not None
        }
        self._any_first = [(p, r) for p, r in self._compiled if _first_segment(r.path) is None]

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]]:
        check_text(path, "path")  # a NUL in a guid would reach storage as a query parameter
        allowed: list[str] = []
        literal = False
        first = _first_segment(path)
        rows = self._compiled if first is None else self._by_first.get(first, self._any_first)
        for pattern, route in rows:
            if literal and "{" in route.path:
                break  # a literal path is its own resource: its rows' methods are all there are
            found = pattern.fullmatch(path)
            if found is None:
                continue
            if method in route.methods or (method == "HEAD" and "GET" in route.methods):
                return route, found.groupdict()
            allowed.extend(route.methods)
            literal = "{" not in route.path
        if allowed:
            raise MethodNotAllowed(path, allowed)
        raise RouteNotFound(path)


def _first_segment(path: str) -> str | None:
    """The text between a path's first and second slash; None when it holds a parameter
    (a row's ``{name}``) or the path does not start with a slash (then every row is tried)."""
    if not path.startswith("/"):
        return None
    first = path[1:].split("/", 1)[0]
    return None if "{" in first else first


class RouteNotFound(PaycoreError):
    status = 404

    def __init__(self, path: str) -> None:
        super().__init__(f"not found: {path[:200]}")


class MethodNotAllowed(PaycoreError):
    status = 405

    def __init__(self, path: str, allowed: list[str]) -> None:
        self.allowed = sorted(set(allowed))
        super().__init__(f"method not allowed: {path[:200]} takes {', '.join(self.allowed)}")


def dispatch(gateway: Gateway, router: Router, request: Request) -> Response:
    """Answer one request. Never raises; never puts a stack trace in a body."""
    caller: SessionKey | None = None
    plain = False
    try:
        if len(request.body) > MAX_BODY:
            raise PayloadTooLarge(MAX_BODY)
        route, params = router.match(request.method, request.path)
        plain = route.plain_answer
        if route.ip_limit is not None:
            gateway.client_limits.check(route.ip_limit, request.client)
        if route.session != "none":
            if request.reads_uri:
                request.json()  # a repeated query parameter is refused on every signed read
            elif not request.body and not route.signed_empty_body and request.sends_session:
                # Refused before the nonce is spent: the signature may be a poll's.
                raise InvalidInput(
                    "body", "required with session headers (the signature covers the body)"
                )
        idempotency_key = request.headers.get("idempotency-key") if route.idempotent else None
        if idempotency_key is not None:
            once = attrs.evolve(route, handler=_idempotently(route, check_key(idempotency_key)))
            result, caller = _in_one_transaction(gateway, once, request, params)
        elif route.one_transaction and route.session != "none" and request.sends_session:
            result, caller = _in_one_transaction(gateway, route, request, params)
        else:
            with _reading_along(gateway, route, request, params):
                if route.session != "none" and request.sends_session:
                    caller = _authenticate(gateway, request)
                _check_soft_mode(route, caller)
                result = route.handler(Call(gateway, request, params, caller))
        response = result if isinstance(result, Response) else json_response(result, route.status)
    except MethodNotAllowed as exc:
        response = attrs.evolve(
            text_response(exc.text, exc.status), headers={"allow": ", ".join(exc.allowed)}
        )
    except StorageUnavailable as exc:
        return storage_unavailable(gateway, exc)
    except PaycoreError as exc:
        response = text_response(exc.text, exc.status)
        extra = getattr(exc, "headers", None)  # an error that tells when to retry (429)
        if extra:
            response = attrs.evolve(response, headers=dict(extra))
    except Exception:
        log.exception("unhandled error on %s %s", request.method, request.path)
        return text_response("internal error", 500)
    return response if plain else _maybe_encrypt(gateway, request, caller, response)


def _authenticate(gateway: Gateway, request: Request) -> SessionKey | None:
    return gateway.sessions.authenticate(
        method=request.method,
        uri=request.uri,
        body=request.body,
        headers=request.headers,
        required=False,
    )


def _reading_along(
    gateway: Gateway, route: Route, request: Request, params: Mapping[str, str]
) -> AbstractContextManager[None]:
    """For a signed request to a route that reads one invoice first: the nonce's spend
    reads it along (one storage call); anything else as it is."""
    if route.signed_read_of is None or not request.sends_session:
        return contextlib.nullcontext()
    return gateway.reading_along(params[route.signed_read_of])


def _check_soft_mode(route: Route, caller: SessionKey | None) -> None:
    """A ``session`` route needs the owner's session in every auth mode: in soft mode a
    merely claimed owner must not change another merchant's state (docs/decisions.md)."""
    if route.soft_mode == "session" and caller is None:
        raise AuthError(
            "missing x-session-nonce and x-session-signature headers "
            "(this call changes the owner's state: a session is needed in every auth mode)"
        )


def _in_one_transaction(
    gateway: Gateway, route: Route, request: Request, params: Mapping[str, str]
) -> tuple[Any, SessionKey | None]:
    """The session check and the handler in one storage transaction.

    What needs no storage is done before the transaction opens: the signing key's recovery
    and the body's reading, a signed write's costliest CPU. Inside, they would hold the
    transaction's locks while they ran (on SQLite the one writer lock every other write of
    the process queues for). Their errors keep their order: a bad signature is refused
    before anything is spent, a bad body after the nonce is spent, as before.

    When the handler fails, that transaction rolls back whole, the spent nonce with it; the
    nonce is then spent again on its own, so a refused request stays spent exactly as when
    the two had transactions of their own (a captured request that failed once must not
    succeed later, when the state that refused it has changed). A storage outage is the
    exception: nothing was done, and the client is told to retry.
    """
    signed = gateway.sessions.check(
        method=request.method, uri=request.uri, body=request.body, headers=request.headers,
        required=False,
    )  # fmt: skip
    ahead = _read_ahead(route, request)
    caller: SessionKey | None = None
    try:
        with gateway.one_transaction():
            caller = None if signed is None else gateway.sessions.spend(signed)
            _check_soft_mode(route, caller)
            return route.handler(Call(gateway, request, params, caller, ahead)), caller
    except StorageUnavailable:
        raise
    except Exception:
        if signed is not None and caller is not None:
            # Refused if a copy of this request spent the nonce since the rollback (that
            # copy was then the one acceptance of the message), or if storage just went
            # away; either way the handler's error is the answer.
            with contextlib.suppress(PaycoreError):
                gateway.sessions.spend(signed)
        raise


def _read_ahead(route: Route, request: Request) -> ReadAhead | None:
    """The POST body as the route's request class, read now (see :func:`_in_one_transaction`)."""
    if route.request is None or request.reads_uri:
        return None
    try:
        return ReadAhead(route.request, wire.read(route.request, request.json()), None)
    except PaycoreError as error:
        return ReadAhead(route.request, None, error)


def _idempotently(route: Route, key: str) -> Handler:
    """``route``'s handler behind ``key``: the stored answer when the key has one, else the
    handler's answer, stored under the key in the same transaction (``Gateway.idempotency``).
    Keys are the signing owner's own; unsigned requests (soft mode) share one key space."""

    def run(call: Call) -> Response:
        scope = call.caller.owner if call.caller is not None else ""
        request = call.request
        signed = request.uri.encode() if request.reads_uri else request.body
        fingerprint = hashlib.sha256(
            request.method.upper().encode() + b" " + request.path.encode() + b"\n" + signed
        ).hexdigest()
        idempotency = call.gateway.idempotency
        found = idempotency.begin(scope, route.name, key, fingerprint)
        if found is not None:
            return Response(
                found.status, found.body, found.content_type, {"idempotent-replayed": "true"}
            )
        result = route.handler(call)
        answer = result if isinstance(result, Response) else json_response(result, route.status)
        answer = answer.joined()
        idempotency.finish(scope, route.name, key, answer.status, answer.content_type, answer.body)
        return answer

    run.__name__ = route.handler.__name__
    return run


def storage_unavailable(gateway: Gateway, exc: StorageUnavailable) -> Response:
    """503 with ``Retry-After``: the request was fine, storage was not. One log line per
    kind of failure per interval, no traceback: an outage must not flood the log."""
    gateway.storage_outages.failure(
        exc.kind, "storage unavailable (%s: %s): answering 503", exc.kind, exc.detail
    )
    retry_after = str(gateway.settings.storage_retry_after)
    return attrs.evolve(text_response(exc.text, exc.status), headers={"retry-after": retry_after})


def _maybe_encrypt(
    gateway: Gateway, request: Request, caller: SessionKey | None, response: Response
) -> Response:
    """Encrypt a successful JSON answer for a caller that registered an encryption key,
    unless the request opted out with ``x-encryption: none``.

    See docs/interface.md §Encrypted responses."""
    if (
        caller is None
        or not caller.encryption_public_key
        or request.headers.get("x-encryption", "").lower() == "none"
        or response.status >= 300
        or response.content_type != "application/json"
    ):
        return response
    from .encryption import encrypt_response

    # Encrypted as one message: a streamed answer is gathered first (bounded by its ceiling).
    return encrypt_response(caller.encryption_public_key, response.joined())
