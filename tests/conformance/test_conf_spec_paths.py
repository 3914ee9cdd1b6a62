"""The interface reference (docs/interface.md) and the router agree, on every transport.

The reference's "Endpoints" section documents each operation under a ``#### METHOD /path``
heading (``#### GET, POST /path`` for the helpers that take both). Two promises are checked:

- the headings name exactly the routed operations: an endpoint added to the route table
  without its section, or a section left behind after a route was removed, fails here;
- every documented operation reaches a handler through the core and both adapters: not the
  router's ``not found: <path>`` 404 nor its 405. GET /ws may be served by the adapter's
  WebSocket route instead of the route table; either counts.

The generated index table at the top of the section is checked separately
(tests/docs/test_interface_doc.py); this test reads only the hand-written headings.
"""

from __future__ import annotations

import re
from pathlib import Path

from conf_env import Env
from conf_transport import FlaskTransport, LitestarTransport, Transport

from paycore.api.table import build_router

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "interface.md"

_HEADING = re.compile(r"^#### ((?:GET|POST)(?:, (?:GET|POST))*) (/\S*)\s*$")

#: Sample values for path parameters, so each templated path is requested for real.
_PARAMS = {"{name}": "checkout.js"}


def documented_operations(text: str) -> list[tuple[str, str]]:
    """(method, path) of each ``#### METHOD[, METHOD] /path`` heading of "## Endpoints"."""
    section = text.split("\n## Endpoints\n", 1)[1]
    section = re.split(r"\n## (?!#)", section, maxsplit=1)[0]
    found: list[tuple[str, str]] = []
    for line in section.splitlines():
        heading = _HEADING.match(line)
        if heading:
            found.extend((method, heading[2]) for method in heading[1].split(", "))
    return sorted(found)


def routed_operations() -> list[tuple[str, str]]:
    return sorted((m, route.path) for route in build_router().routes for m in route.methods)


DOCUMENTED = documented_operations(REFERENCE.read_text("utf-8"))


def test_the_reference_documents_exactly_the_routed_operations() -> None:
    documented, routed = set(DOCUMENTED), set(routed_operations())
    assert len(DOCUMENTED) == len(documented), "an operation is documented twice"
    assert sorted(routed - documented) == [], "routed but not documented in docs/interface.md"
    assert sorted(documented - routed) == [], "documented in docs/interface.md but not routed"


def test_the_parser_reads_each_form() -> None:
    text = (
        "## Records\n#### POST /not-an-endpoint\n"
        "## Endpoints\n### A\n#### POST /a\n#### GET, POST /b\n#### GET /c/{x}\n"
        "#### PUT /not-ours\nPOST /not-a-heading\n"
        "## Authentication\n#### GET /after\n"
    )
    assert documented_operations(text) == [
        ("GET", "/b"),
        ("GET", "/c/{x}"),
        ("POST", "/a"),
        ("POST", "/b"),
    ]


def _adapter_serves_websocket(transport: Transport) -> bool:
    """Whether the framework app behind ``transport`` has a WebSocket route at /ws."""
    if isinstance(transport, FlaskTransport):
        app = transport.client.application
        return any(rule.rule.endswith("/ws") for rule in app.url_map.iter_rules())
    if isinstance(transport, LitestarTransport):
        return any(route.path.endswith("/ws") for route in transport.client.app.routes)
    return False


def test_every_documented_operation_is_routed(env: Env) -> None:
    _owner, [key] = env.merchant("m", "k")
    guid = env.create(key)["guid"]
    missing: list[str] = []
    for method, template in DOCUMENTED:
        path = template.replace("{guid}", guid)
        for param, value in _PARAMS.items():
            path = path.replace(param, value)
        if template.startswith("/docs/assets/"):
            path = path.replace("checkout.js", "docs.js")  # the reference page's own file
        if template.startswith("/dashboard/assets/"):
            path = path.replace("checkout.js", "dashboard.js")  # the dashboard's own file
        if template == "/invoice/{guid}/events":
            # An event stream never ends, and a test client reads a body to its end: its
            # HEAD answers the stream's first message and closes.
            method = "HEAD"
        answer = env.api.call(method, path)
        routed = not (
            (answer.status == 404 and answer.text.startswith("not found:")) or answer.status == 405
        )
        if not routed and template == "/ws":
            routed = _adapter_serves_websocket(env.api.transport)
        if not routed:
            missing.append(f"{method} {template} -> {answer.status} {answer.body[:80]!r}")
    assert missing == [], missing
