"""A header field sent twice reaches paycore as one joined value under both adapters.

WSGI servers join a repeated field with ", " before Flask sees it; ASGI hands the fields over
one by one, and ``dict(request.headers)`` would keep only the first. Were the first one a
valid nonce, a request with two nonces would pass under Litestar only; joined, the value
parses as neither, and both adapters refuse it alike (401).
"""

from __future__ import annotations

from typing import Any

import anyio
import flask
from adapter_helpers import PREFIX, account, registration, session_headers
from litestar import Litestar

from paycore import Gateway
from paycore.api import Request, Response, handle
from paycore_flask import PayCore
from paycore_litestar import PayCoreConfig, PayCorePlugin

NONCE_REFUSED = (
    b"session signature: x-session-nonce must be a positive decimal integer below 2**63, "
    b"without sign or leading zeros"
)


def _registered_key(gateway: Gateway) -> dict[str, str]:
    """Session headers of a registered key, signed over an empty poll body at nonce 1."""
    import json

    owner, key = account("repeat owner"), account("repeat key")
    body = json.dumps(registration(owner, key)).encode()
    answer: Response = handle(gateway, Request("POST", "/auth/register-pubkey", body=body))
    assert answer.status == 200, answer.body
    return session_headers(key, 1, b"")


def test_flask_refuses_a_repeated_nonce(gateway: Gateway) -> None:
    headers = _registered_key(gateway)
    app = flask.Flask("repeat")
    PayCore(app, gateway=gateway, prefix=PREFIX)
    sent = [*headers.items(), ("x-session-nonce", "2")]
    reply = app.test_client().post(PREFIX + "/poll/events", headers=sent)
    assert (reply.status_code, reply.get_data()) == (401, NONCE_REFUSED)
    # the same headers once each: accepted, so the refusal was the repeat's
    reply = app.test_client().post(PREFIX + "/poll/events", headers=headers)
    assert reply.status_code == 200, reply.get_data()


def _asgi_post(app: Litestar, path: str, headers: list[tuple[bytes, bytes]]) -> tuple[int, bytes]:
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": PREFIX + path,
        "raw_path": (PREFIX + path).encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"test"), (b"content-length", b"0"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("test", 80),
        "state": {},
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    anyio.run(app, scope, receive, send)  # type: ignore[arg-type]
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, body


def test_litestar_refuses_a_repeated_nonce(gateway: Gateway) -> None:
    headers = [(k.encode(), v.encode()) for k, v in _registered_key(gateway).items()]
    app = Litestar([], plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway))])
    repeated = [*headers, (b"X-Session-Nonce", b"2")]  # another spelling of the same field
    assert _asgi_post(app, "/poll/events", repeated) == (401, NONCE_REFUSED)
    status, body = _asgi_post(app, "/poll/events", headers)
    assert status == 200, body
