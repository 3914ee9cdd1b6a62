"""The core's ``Request`` lowers header names once, and works out once whether the request
carries a session; the Litestar adapter hands over names it lowered already."""

from __future__ import annotations

from typing import Any

import attrs

from paycore.api import Request
from paycore.api.http import LowerHeaders
from paycore_litestar.request import scope_request


def test_a_plain_mapping_is_lowered_and_its_session_headers_are_seen() -> None:
    request = Request("GET", "/invoice/x", headers={"X-Session-Nonce": "1", "Host": "a"})
    assert dict(request.headers) == {"x-session-nonce": "1", "host": "a"}
    assert request.sends_session is True
    assert Request("GET", "/invoice/x", headers={"Host": "a"}).sends_session is False


def test_an_evolved_request_works_out_its_session_again() -> None:
    signed = Request("GET", "/invoice/x", headers={"x-session-signature": "0x"})
    assert attrs.evolve(signed, headers={"host": "a"}).sends_session is False
    assert attrs.evolve(signed, path="/invoice/y").sends_session is True


def test_headers_an_adapter_lowered_are_kept_as_they_are() -> None:
    lowered = LowerHeaders({"host": "a", "if-none-match": '"t"'})
    assert Request("GET", "/invoice/x", headers=lowered).headers is lowered


def _scope(headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    return {
        "type": "http", "method": "GET", "scheme": "http", "path": "/pay/invoice/x",
        "raw_path": b"/pay/invoice/x", "query_string": b"", "root_path": "",
        "headers": headers, "client": ("127.0.0.1", 5), "server": ("127.0.0.1", 8000),
    }  # fmt: skip


def test_litestar_hands_over_lowered_joined_headers_and_the_host_s_root_url() -> None:
    request = scope_request(
        _scope([(b"host", b"shop.test"), (b"X-Session-Nonce", b"1"), (b"x-session-nonce", b"2")]),
        "/pay",
    )
    assert type(request.headers) is LowerHeaders
    assert dict(request.headers) == {"host": "shop.test", "x-session-nonce": "1, 2"}
    assert request.sends_session is True
    assert (request.path, request.root_url) == ("/invoice/x", "http://shop.test")
    other = scope_request(_scope([(b"host", b"other.test")]), "/pay")
    assert (other.root_url, other.sends_session) == ("http://other.test", False)


def test_flask_lists_the_fields_werkzeug_lists_with_lowered_names() -> None:
    from werkzeug.datastructures import EnvironHeaders

    from paycore_flask.view import environ_headers

    environ: dict[str, Any] = {
        "REQUEST_METHOD": "GET", "PATH_INFO": "/pay/invoice/x", "SERVER_NAME": "shop.test",
        "HTTP_HOST": "shop.test", "HTTP_X_SESSION_NONCE": "1, 2", "HTTP_IF_NONE_MATCH": '"t"',
        "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": "",
        "HTTP_CONTENT_TYPE": "text/plain", "wsgi.url_scheme": "http",
    }  # fmt: skip
    fields = environ_headers(environ)
    assert type(fields) is LowerHeaders
    assert fields == {name.lower(): value for name, value in EnvironHeaders(environ)}
    assert fields == {
        "host": "shop.test", "x-session-nonce": "1, 2", "if-none-match": '"t"',
        "content-type": "application/json",
    }  # fmt: skip
