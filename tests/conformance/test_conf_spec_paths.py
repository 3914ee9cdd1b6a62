"""Every operation SPEC.md section 4 lists is routed, with its method, on every transport.

The list is committed below, because CI may run without the shared folder. When
``../shared/SPEC.md`` (beside the repository) is there, the test first parses section 4 and
asserts the copy still equals it, so a SPEC change cannot pass unnoticed.

"Routed" means the request reaches a handler: not the router's ``not found: <path>`` 404 nor
its 405. GET /ws may be served by the adapter's WebSocket route instead of the route table;
either counts.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conf_env import Env
from conf_transport import FlaskTransport, LitestarTransport, Transport

SPEC = Path(__file__).resolve().parents[2].parent / "shared" / "SPEC.md"

#: (method, path) of every operation in SPEC.md section 4 "Endpoints", as parsed below.
SPEC_OPERATIONS = sorted(
    [
        ("POST", "/invoice"),
        ("POST", "/invoice/challenge"),
        ("GET", "/invoice/{guid}"),
        ("GET", "/invoices"),
        ("GET", "/transactions"),
        ("GET", "/prices"),
        ("POST", "/poll/events"),
        ("GET", "/ws"),
        ("POST", "/auth/register-pubkey"),
        ("POST", "/auth/deregister-pubkey"),
        ("GET", "/auth/pubkeys"),
        ("POST", "/auth/register-callback"),
        ("POST", "/webhook/set"),
        ("POST", "/webhook/get"),
        ("POST", "/webhook/clear"),
        *[
            (method, path)
            for path in (
                "/initWallet",
                "/deployWallet",
                "/getAddress",
                "/getBalances",
                "/initWithdraw",
                "/history",
                "/withdraw",
            )
            for method in ("GET", "POST")
        ],
        ("POST", "/changeCallbackUrl"),
        ("POST", "/setEmailNotifications"),
        ("POST", "/getFaucet"),
        ("POST", "/disableWalletIndex"),
        ("POST", "/enableWalletIndex"),
        ("POST", "/addNewAppKey"),
        ("POST", "/removeAppKey"),
        ("POST", "/getAppKeys"),
        *[
            (method, path)
            for path in ("/mevStakingInfo", "/mevStake", "/mevUnstake", "/mevClaim")
            for method in ("GET", "POST")
        ],
    ]
)

_HEADING = re.compile(r"^#### (GET|POST) (/\S+)\s*$")
_ROW = re.compile(r"^\|\s*(?:(GET|POST) )?(/[^\s|]+)\s*\|")


def spec_operations(text: str) -> list[tuple[str, str]]:
    """(method, path) pairs of section 4: ``#### METHOD /path`` headings, and the first cell
    of table rows -- ``METHOD /path``, or a bare ``/path`` whose methods the subsection
    states once ("Each is accepted as GET or POST", "All POST")."""
    section = text.split("## 4. Endpoints", 1)[1].split("\n## 5.", 1)[0]
    found: set[tuple[str, str]] = set()
    methods: tuple[str, ...] = ()
    for line in section.splitlines():
        if line.startswith("### "):
            methods = ()
        if "Each is accepted as GET or POST" in line:
            methods = ("GET", "POST")
        elif line.startswith("All POST"):
            methods = ("POST",)
        heading = _HEADING.match(line)
        if heading:
            found.add((heading[1], heading[2]))
            continue
        row = _ROW.match(line)
        if row is None:
            continue
        if row[1]:
            found.add((row[1], row[2]))
        else:
            assert methods, f"no method stated for {row[2]} in SPEC.md: {line!r}"
            found.update((method, row[2]) for method in methods)
    return sorted(found)


def test_the_committed_list_is_what_spec_md_lists() -> None:
    if not SPEC.exists():
        pytest.skip(f"{SPEC} is not here; the committed list stands in for it")
    assert spec_operations(SPEC.read_text("utf-8")) == SPEC_OPERATIONS


def test_the_parser_reads_each_form() -> None:
    text = (
        "## 4. Endpoints\n### A\n#### POST /a\n| POST /b | x |\n"
        "### C\nEach is accepted as GET or POST with the listed fields.\n| Path | f |\n"
        "|---|---|\n| /c | x |\n### D\nAll POST, response status 200.\n| /d | x |\n"
        "## 5. Authentication\n#### GET /not-here\n"
    )
    assert spec_operations(text) == [
        ("GET", "/c"),
        ("POST", "/a"),
        ("POST", "/b"),
        ("POST", "/c"),
        ("POST", "/d"),
    ]


def _adapter_serves_websocket(transport: Transport) -> bool:
    """Whether the framework app behind ``transport`` has a WebSocket route at /ws."""
    if isinstance(transport, FlaskTransport):
        app = transport.client.application
        return any(rule.rule.endswith("/ws") for rule in app.url_map.iter_rules())
    if isinstance(transport, LitestarTransport):
        return any(route.path.endswith("/ws") for route in transport.client.app.routes)
    return False


def test_every_spec_operation_is_routed(env: Env) -> None:
    _owner, [key] = env.merchant("m", "k")
    guid = env.create(key)["guid"]
    missing: list[str] = []
    for method, template in SPEC_OPERATIONS:
        path = template.replace("{guid}", guid)
        answer = env.api.call(method, path)
        routed = not (
            (answer.status == 404 and answer.text.startswith("not found:")) or answer.status == 405
        )
        if not routed and template == "/ws":
            routed = _adapter_serves_websocket(env.api.transport)
        if not routed:
            missing.append(f"{method} {template} -> {answer.status} {answer.body[:80]!r}")
    assert missing == [], missing
