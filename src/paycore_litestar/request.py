"""Litestar's request, as its ASGI scope holds it, made into paycore's ``Request``.

From the scope rather than Litestar's ``Request`` object: the direct path
(``paycore_litestar.direct``) answers a GET or POST before Litestar builds one, and the handlers
read the same values through it, so both give the core the same request.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from litestar.connection import ASGIConnection
from litestar.types import HTTPScope, Scope

from paycore.api import Request as PaycoreRequest
from paycore.api.http import LowerHeaders


def scope_request(scope: HTTPScope, prefix: str = "", body: bytes = b"") -> PaycoreRequest:
    """The core's request for a routed scope; ``prefix`` is the Router's: the paycore path
    is what follows it (a fallback's ``subpath`` parameter, where Litestar matched one)."""
    full: str = scope["path"]
    below = full[len(prefix) :] if prefix and full.startswith(prefix) else full
    subpath = scope.get("path_params", {}).get("subpath") or below or "/"
    path = subpath if subpath.startswith("/") else "/" + subpath
    target = raw_uri(scope)
    if target.split("?", 1)[0].endswith("/") and not path.endswith("/"):
        path += "/"  # Litestar's router drops it; paycore treats /x/ and /x as two paths
    client = scope.get("client")
    return PaycoreRequest(
        method=scope["method"].upper(),
        path=path,
        query_string=scope.get("query_string", b"").decode("utf-8", "replace"),
        headers=joined_headers(scope),  # lower case already: the core keeps them as they are
        body=body,
        raw_uri=target,
        # The scheme and host Litestar reports (the ASGI server's proxy handling applied,
        # when the host turned it on), with the app's root path.
        root_url=root_url(scope),
        prefix=prefix,
        # the ASGI scope's client (the server's proxy-headers handling applied, if on)
        client=client[0] if client else "",
    )


#: ``str(request.base_url)`` by the scope values Litestar makes it from (scheme, server,
#: root path, Host header), for a few recent ones: building the URL object anew is a
#: tenth of the adapter's work per request. Bounded, since the Host header is the client's.
_ROOT_URLS: dict[tuple[Any, ...], str] = {}
_ROOT_URLS_MAX = 64


def root_url(scope: Scope) -> str:
    host = next((value for name, value in scope["headers"] if name == b"host"), None)
    server = scope.get("server")
    key = (
        scope.get("scheme"),
        None if server is None else tuple(server),  # some ASGI clients send a list
        scope.get("app_root_path") or scope.get("root_path", ""),
        host,
    )
    found = _ROOT_URLS.get(key)
    if found is None:
        found = str(ASGIConnection[Any, Any, Any, Any](scope).base_url).rstrip("/")
        if len(_ROOT_URLS) >= _ROOT_URLS_MAX:
            _ROOT_URLS.clear()
        _ROOT_URLS[key] = found
    return found


def joined_headers(scope: Scope) -> LowerHeaders:
    """Every header field, a repeated one joined with ``", "`` as WSGI servers join them.

    ``dict(request.headers)`` would keep only the first of two ``x-session-nonce`` fields;
    joined, a repeated session header reaches paycore as one value that does not parse, and
    is refused the same way under both adapters.
    """
    fields = list(scope["headers"])  # a list from every server; an iterable by the type
    joined = LowerHeaders(
        {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in fields}
    )
    if len(joined) == len(fields):  # no name repeated (the usual request): done
        return joined
    joined = LowerHeaders()
    for raw_name, raw_value in fields:
        name, value = raw_name.decode("latin-1").lower(), raw_value.decode("latin-1")
        joined[name] = f"{joined[name]}, {value}" if name in joined else value
    return joined


def raw_uri(scope: Scope) -> str:
    """The request target exactly as the client sent it: a GET's session signature covers it.

    ASGI's ``raw_path`` is the path undecoded (some test transports leave the query on it,
    and a raw path cannot hold a literal ``?``, so that case is recognised); without one the
    decoded path is re-quoted the way clients do.
    """
    query = scope.get("query_string", b"")
    raw = scope.get("raw_path")
    if raw:
        if b"?" in raw:
            return raw.decode("utf-8", "replace")
        target = raw
    else:
        target = quote(scope["path"], safe="/:@!$&'()*+,;=~").encode()
    return (target + (b"?" + query if query else b"")).decode("utf-8", "replace")
