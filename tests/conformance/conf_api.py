"""The suite's client: a transport, plus session signing and strict answer checks."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs
from conf_keys import SessionKey, public_key_of, sign_text
from conf_transport import Transport, encode_body, request_uri
from eth_account.signers.local import LocalAccount


@attrs.frozen
class Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")

    def json(self) -> Any:
        assert self.headers.get("content-type", "").startswith("application/json"), (
            self.status,
            self.headers,
            self.body[:300],
        )
        return json.loads(self.body)

    def ok(self, status: int = 200) -> Any:
        """The JSON body, after checking the status."""
        assert self.status == status, (self.status, self.body[:500])
        return self.json()

    def error(self, status: int, text: str | None = None, *, prefix: str | None = None) -> str:
        """Check an error answer: status, ``text/plain``, exactly one line; returns the text."""
        assert self.status == status, (status, self.status, self.body[:500])
        content_type = self.headers.get("content-type", "")
        assert content_type.startswith("text/plain"), (content_type, self.body[:300])
        body = self.text
        assert body, "an error body must say what went wrong"
        assert "\n" not in body and "\r" not in body, f"not one line: {body!r}"
        assert "Traceback" not in body
        if text is not None:
            assert body == text, body
        if prefix is not None:
            assert body.startswith(prefix), body
        return body


@attrs.define
class Api:
    transport: Transport

    @property
    def name(self) -> str:
        return self.transport.name

    def call(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        raw_body: bytes | None = None,
        query: str | None = None,
        headers: Mapping[str, str] | None = None,
        session: SessionKey | None = None,
        nonce: int | None = None,
        sign_uri: str | None = None,
    ) -> Answer:
        """One request. With ``session``, adds headers signed over the body (non-GET) or the
        request URI (GET); ``sign_uri`` signs another URI than the one sent (for refusals)."""
        sent = dict(headers or {})
        if session is not None:
            body = encode_body(json_body, raw_body)
            if method.upper() == "GET":
                hashed = (sign_uri or request_uri(path, query)).encode()
            else:
                hashed = body
            sent.update(session.headers_for(hashed, nonce=nonce))
        status, reply_headers, reply_body = self.transport.request(
            method, path, json_body=json_body, raw_body=raw_body, query=query, headers=sent
        )
        return Answer(status, reply_headers, reply_body)

    def get(self, path: str, query: str | None = None, **kw: Any) -> Answer:
        return self.call("GET", path, query=query, **kw)

    def post(self, path: str, json_body: Any = None, **kw: Any) -> Answer:
        return self.call("POST", path, json_body=json_body, **kw)

    # -- wallet-signed helpers -----------------------------------------------------------
    def register_key(self, owner: LocalAccount, key: SessionKey) -> Answer:
        public_key = public_key_of(key.key)
        return self.post(
            "/auth/register-pubkey",
            {
                "ownerAddress": owner.address,
                "publicKey": public_key,
                "signature": sign_text(owner, public_key),
            },
        )

    def refresh_key(self, owner: LocalAccount, key: SessionKey, **extra: Any) -> Answer:
        """The registration body again, with session headers of the key itself: a refresh."""
        public_key = public_key_of(key.key)
        body = {
            "ownerAddress": owner.address,
            "publicKey": public_key,
            "signature": sign_text(owner, public_key),
            **extra,
        }
        return self.post("/auth/register-pubkey", body, session=key)

    def registered(self, owner: LocalAccount, key: SessionKey) -> SessionKey:
        self.register_key(owner, key).ok()
        return key
