"""Soft mode without foreign writes: with ``auth_mode = "soft"`` a merely claimed owner may
read and create invoices, but no call that changes an owner's state runs without that
owner's session (docs/decisions.md, "What soft mode allows").

The route table is walked, not listed here: every row must say what soft mode allows on it,
the docs' table must match it row for row, and every ``session`` row is sent a claimed owner
over HTTP through the core and both adapters, on memory and PostgreSQL storage.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from conf_api import Api
from conf_env import CHECKOUT, ETH_1, PRICES, Env, FakeClock
from conf_keys import account
from conf_transport import open_transport

from paycore import ChainConfig
from paycore.api.routing import SOFT_MODES, Route, Router
from paycore.api.table import build_router
from paycore.chains.evm import plugin as evm_plugin
from paycore.config import Settings
from paycore.gateway import Gateway
from paycore.storage import Storage

DECISIONS = Path(__file__).resolve().parents[2] / "docs" / "decisions.md"
BACKENDS = ["memory", pytest.param("postgresql", marks=pytest.mark.postgres)]
#: Chain 1 with a factory, so payment links can derive deposit addresses (no node is asked).
CHAINS = {
    1: ChainConfig(
        chain_id=1,
        name="ethereum",
        rpc_url="http://127.0.0.1:9",
        factory="0x5FbDB2315678afecb367f032d93F642f64180aa3",
    )
}
LOGO = "https://cdn.shop.example/brand/logo.svg"
#: Owner-scoped POSTs that soft mode lets a claimed owner make, each for a reason the docs
#: give: invoice creation (docs/interface.md §Modes) and three reads that also answer POST.
CLAIMED_POSTS = {"/invoice", "/getBalances", "/history", "/initWithdraw"}


def _routes() -> list[Route]:
    return build_router().routes


def test_every_route_says_what_soft_mode_allows() -> None:
    routes = _routes()
    assert routes and all(r.soft_mode in SOFT_MODES for r in routes)
    # An owner-scoped call that POSTs is a write unless the docs say why not.
    for route in routes:
        if route.session == "owner" and "POST" in route.methods:
            assert route.soft_mode in ("session", "signed") or route.path in CLAIMED_POSTS, (
                route.path,
                route.soft_mode,
            )
    # A route added without a classification is not served at all.
    bare = Route(("POST",), "/new-write", lambda call: {}, "a new endpoint", session="owner")
    with pytest.raises(ValueError, match="routes without a soft_mode"):
        Router([*routes, bare])


def _documented() -> dict[str, str]:
    text = DECISIONS.read_text()
    section = text.split("### What soft mode allows", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([A-Z ]+ /[^`]*)` \| (\w+) \|", section, flags=re.M)
    assert rows, "docs/decisions.md has no soft-mode table"
    table = dict(rows)
    assert len(table) == len(rows), "a route is listed twice"
    return table


def test_the_docs_table_is_the_route_table() -> None:
    served = {f"{' '.join(r.methods)} {r.path}": str(r.soft_mode) for r in _routes()}
    assert _documented() == served


@pytest.fixture
def soft_env(transport_name: str, make_storage: Callable[..., Storage]) -> Iterator[Any]:
    stack = ExitStack()

    def make(backend: str) -> Env:
        clock = FakeClock()
        settings = Settings(
            database_url="memory://",
            prices=PRICES,
            checkout_url=CHECKOUT,
            auth_mode="soft",
            chains=CHAINS,
        )
        storage = make_storage(backend)
        gateway = Gateway(
            settings, storage=storage, entry_points=False, plugins=[evm_plugin], clock=clock
        )
        stack.callback(gateway.close)
        transport = stack.enter_context(open_transport(transport_name, gateway))
        return Env(Api(transport), gateway, clock)

    with stack:
        yield make


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_claimed_owner_changes_nothing_of_another_merchant(soft_env: Any, backend: str) -> None:
    env: Env = soft_env(backend)
    api = env.api
    victim, [key] = env.merchant("victim", "k")
    profile = api.post(
        "/merchant/profile",
        {"name": "Mugs", "logoUrl": LOGO, "support": "a@shop.example"},
        session=key,
    ).ok()
    link = api.post(
        "/link",
        {"chainId": 1, "description": "mug", "acceptedTokens": [ETH_1], "amount": "1"},
        session=key,
    ).ok(201)
    mallory = account("mallory").address
    claimed = {"owner": victim.address, "ownerAddress": victim.address}
    bodies: dict[str, dict[str, Any]] = {
        "/merchant/profile": {"name": "Evil", "logoUrl": "https://evil.example/l.png"},
        "/link": {"chainId": 1, "description": "x", "acceptedTokens": [ETH_1]},
        "/link/disable": {"id": link["id"]},
        "/refund": {"guid": "0" * 32, "amount": "1", "to": mallory},
        "/refund/cancel": {"refundId": "1"},
        "/webhook/redeliver": {"id": 1},
        "/webhook/redeliver-failed": {"since": 0},
        "/auth/register-callback": {"url": "https://evil.example/hook"},
    }
    walked = set()
    for route in _routes():
        if route.soft_mode != "session":
            continue
        walked.add(route.path)
        body = {**claimed, **bodies.get(route.path, {})}
        api.post(route.path, body).error(
            401,
            "session signature: missing x-session-nonce and x-session-signature headers "
            "(this call changes the owner's state: a session is needed in every auth mode)",
        )
    assert walked >= set(bodies), set(bodies) - walked
    # Nothing changed: the victim's profile and link are as the victim left them.
    assert api.get("/merchant/profile", f"owner={victim.address}").ok() == profile
    links = api.get("/links", f"owner={victim.address}").ok()["items"]
    assert [(x["id"], x["disabledAt"]) for x in links] == [(link["id"], None)]
    assert env.gateway.webhooks.get(victim.address).url == ""
    # The owner's own session still works in soft mode.
    assert api.post("/link/disable", {"id": link["id"]}, session=key).ok()["disabledAt"]
