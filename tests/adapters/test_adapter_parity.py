"""Both adapters, side by side: the same bytes out, and the client's URI is what gets signed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from adapter_helpers import PREFIX, account, registration, session_headers
from flask import Flask
from litestar import Litestar
from litestar.testing import TestClient

from paycore import Gateway
from paycore_flask import PayCore
from paycore_litestar import PayCoreConfig, PayCorePlugin

#: (method, uri, body, headers) -> (status, content-type, body)
Send = Callable[[str, str, bytes, dict[str, str]], tuple[int, str, bytes]]


@contextmanager
def flask_client(gateway: Gateway) -> Iterator[Send]:
    app = Flask("host")
    PayCore(app, gateway=gateway, prefix=PREFIX)
    client = app.test_client()

    def send(method: str, uri: str, body: bytes, headers: dict[str, str]) -> tuple[int, str, bytes]:
        reply = client.open(uri, method=method, data=body, headers=headers)
        return reply.status_code, reply.headers["content-type"], reply.get_data()

    yield send


@contextmanager
def litestar_client(gateway: Gateway) -> Iterator[Send]:
    app = Litestar([], plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway, prefix=PREFIX))])
    with TestClient(app) as client:

        def send(
            method: str, uri: str, body: bytes, headers: dict[str, str]
        ) -> tuple[int, str, bytes]:
            reply = client.request(method, uri, content=body, headers=headers)
            return reply.status_code, reply.headers["content-type"], reply.content

        yield send


CLIENTS = {"flask": flask_client, "litestar": litestar_client}


@pytest.mark.parametrize("path", ["/prices", "/openapi.json", "/invoice/nope", "/nowhere"])
def test_both_adapters_answer_identically(gateway: Gateway, path: str) -> None:
    answers: dict[str, Any] = {}
    for name, open_client in CLIENTS.items():
        with open_client(gateway) as send:
            answers[name] = send("GET", PREFIX + path, b"", {})
    assert answers["flask"] == answers["litestar"]
    assert answers["flask"][0] in (200, 404)


@pytest.mark.parametrize("framework", sorted(CLIENTS))
def test_get_signature_covers_the_uri_as_sent(gateway: Gateway, framework: str) -> None:
    """A session-signed GET with a percent-encoded query verifies only over the raw URI."""
    import json

    owner, key = account("owner"), account("session")
    with CLIENTS[framework](gateway) as send:
        body = json.dumps(registration(owner, key)).encode()
        status, _, text = send(
            "POST", PREFIX + "/auth/register-pubkey", body, {"content-type": "application/json"}
        )
        assert status == 200, text
        raw = f"{PREFIX}/auth/pubkeys?owner={owner.address}&note=a%20b%2Fc%3F"
        decoded = f"{PREFIX}/auth/pubkeys?owner={owner.address}&note=a b/c?"
        status, _, text = send("GET", raw, b"", session_headers(key, 1, decoded.encode()))
        assert (status, text[:19]) == (401, b"session signature: ")
        status, _, text = send("GET", raw, b"", session_headers(key, 2, raw.encode()))
        assert status == 200, text
        assert json.loads(text)["ownerAddress"] == owner.address
