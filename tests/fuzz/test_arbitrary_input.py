"""Arbitrary JSON and arbitrary query text at every route: never a 5xx, and every 4xx one
line of text.

Schemathesis (test_schemathesis.py) generates from the document, so it explores what the
document describes. These properties ignore it: any JSON value as a POST body (objects with
the route's own field names among random ones, so the typed layer is reached past its first
check), any text as a GET's query, through the core's dispatch in both auth modes.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from paycore import NATIVE, Gateway, Settings
from paycore.api import ROUTES, Request, handle
from paycore.api.wire import wire_name

pytestmark = pytest.mark.fuzz

ETH = f"31337:{NATIVE}"

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**300)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40)
    | st.sampled_from(["0", "1", "007", "²", "٣", "1e3", " 1", "0x" + "ab" * 20, ETH, NATIVE])
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=12,
)


def _names(route: Any) -> list[str]:
    return [wire_name(a) for a in attrs.fields(route.request)] if route.request else ["x"]


POST_ROUTES = [r for r in ROUTES if "POST" in r.methods and "{" not in r.path]
GET_ROUTES = [r for r in ROUTES if "GET" in r.methods and "{" not in r.path]


def _gateway(mode: str) -> Gateway:
    settings_ = Settings(database_url="memory://", prices={ETH: "2000"}, auth_mode=mode)
    return Gateway(settings_, entry_points=False)


GATEWAYS = {mode: _gateway(mode) for mode in ("strict", "soft")}


def _check(status: int, content_type: str, body: bytes, what: str) -> None:
    assert status < 500, f"{what} -> {status} {body[:200]!r}"
    if 400 <= status < 500:
        assert content_type.startswith("text/plain"), what
        text = body.decode()
        assert text and "\n" not in text.strip() and "Traceback" not in text, what


@pytest.mark.parametrize("mode", sorted(GATEWAYS))
@pytest.mark.parametrize("route", POST_ROUTES, ids=lambda r: r.path)
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_json_body_is_answered_without_a_server_error(route: Any, mode: str, data: Any) -> None:
    names = _names(route)
    body = data.draw(
        st.one_of(
            json_values,
            st.dictionaries(st.sampled_from(names) | st.text(max_size=8), json_values),
        )
    )
    raw = json.dumps(body).encode()
    response = handle(GATEWAYS[mode], Request("POST", route.path, body=raw, raw_uri=route.path))
    _check(
        response.status, response.content_type, response.body, f"POST {route.path} {raw[:200]!r}"
    )


@pytest.mark.parametrize("mode", sorted(GATEWAYS))
@pytest.mark.parametrize("route", GET_ROUTES, ids=lambda r: r.path)
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_any_query_is_answered_without_a_server_error(route: Any, mode: str, data: Any) -> None:
    names = _names(route)
    pairs = data.draw(
        st.lists(st.tuples(st.sampled_from(names) | st.text(max_size=6), st.text(max_size=50)))
    )
    query = "&".join(f"{quote(k)}={quote(v)}" for k, v in pairs)
    uri = route.path + ("?" + query if query else "")
    response = handle(GATEWAYS[mode], Request("GET", route.path, query_string=query, raw_uri=uri))
    _check(response.status, response.content_type, response.body, f"GET {uri[:200]}")
