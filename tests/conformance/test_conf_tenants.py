"""Many merchants on one instance (issue 28's low and info rows), over HTTP through the core
and both adapters, on memory and PostgreSQL where storage is involved: what one merchant or
a stranger sends never reaches, reveals or piles up on another's state.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from conf_api import Api
from conf_env import CHECKOUT, PRICES, Env, FakeClock
from conf_keys import account, session
from conf_transport import open_transport

from paycore.config import Settings
from paycore.domain.paging import Cursor
from paycore.gateway import Gateway
from paycore.storage import Storage

BACKENDS = ["memory", pytest.param("postgresql", marks=pytest.mark.postgres)]


@pytest.fixture
def make_tenants(transport_name: str, make_storage: Callable[..., Storage]) -> Iterator[Any]:
    stack = ExitStack()

    def make(backend: str = "memory", **overrides: Any) -> Env:
        clock = FakeClock()
        values: dict[str, Any] = {
            "database_url": "memory://",
            "prices": PRICES,
            "checkout_url": CHECKOUT,
            **overrides,
        }
        storage = make_storage(backend)
        gateway = Gateway(Settings(**values), storage=storage, entry_points=False, clock=clock)
        stack.callback(gateway.close)
        transport = stack.enter_context(open_transport(transport_name, gateway))
        return Env(Api(transport), gateway, clock)

    with stack:
        yield make


def test_a_logo_url_names_one_valid_host(make_tenants: Any) -> None:
    """``https://*/l.png`` made the checkout page's CSP ``img-src 'self' https://*``."""
    env: Env = make_tenants()
    owner, [key] = env.merchant("m", "k")
    for logo in (
        "https://*/l.png",
        "https://*.cdn.example/l.png",
        "https://cdn%2a.example/l.png",
        "https://[::1]/l.png",
        "https://-cdn.example/l.png",
        "https://cdn..example/l.png",
        "https://cdn.example:/l.png",
    ):
        body = {"name": "Mugs", "logoUrl": logo}
        env.api.post("/merchant/profile", body, session=key).error(
            400, "invalid request: logoUrl: must name one valid host name (no wildcard)"
        )
    query = f"owner={owner.address}"
    env.api.get("/merchant/profile", query, session=key).error(404)  # nothing stored
    good = "https://cdn.shop.example:8443/brand/l.png"
    saved = env.api.post("/merchant/profile", {"name": "Mugs", "logoUrl": good}, session=key)
    assert saved.ok()["logoUrl"] == good


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_cursor_made_from_another_owners_invoice_is_400(make_tenants: Any, backend: str) -> None:
    env: Env = make_tenants(backend)
    owner, [key] = env.merchant("m", "k")
    other, [theirs] = env.merchant("o", "k")
    mine = [env.create(key)["guid"] for _ in range(3)]
    foreign = env.create(theirs)["guid"]
    query = f"owner={owner.address}&limit=2"
    for guid, direction in ((foreign, "older"), (foreign, "newer"), ("nope", "older")):
        forged = Cursor("invoices", direction, guid, 0).encode()  # type: ignore[arg-type]
        env.api.get("/invoices", f"{query}&cursor={forged}", session=key).error(
            400, "invalid request: cursor: no such position in this invoices list"
        )
    # A position in one's own list still pages.
    own = Cursor("invoices", "older", mine[-1], 0).encode()
    page = env.api.get("/invoices", f"{query}&cursor={own}", session=key).ok()
    assert [i["guid"] for i in page["items"]] == [mine[1], mine[0]]


def test_another_owners_invoice_is_the_same_404_as_none(make_tenants: Any) -> None:
    """/refund answered 403 "another owner's" where /link/disable answers 404."""
    env: Env = make_tenants()
    _owner, [key] = env.merchant("m", "k")
    _other, [theirs] = env.merchant("o", "k")
    foreign = env.create(theirs)["guid"]
    missing = "9629d9e4-9bef-4367-ab0f-9ba2d396b19a"
    for guid in (foreign, missing):
        env.api.post("/refund", {"guid": guid}, session=key).error(404, f"invoice {guid} not found")
    env.api.post("/refund/cancel", {"refundId": "r1"}, session=key).error(
        404, "not found: refund r1"
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_csv_cells_starting_with_a_line_break_are_neutralised(
    make_tenants: Any, backend: str
) -> None:
    env: Env = make_tenants(backend)
    owner, [key] = env.merchant("m", "k")
    texts = ["\n=1+2", "\r=1+2", "\r\n@SUM(A1)", "plain"]
    for n, text in enumerate(texts):
        env.create(key, description=text, address=account(f"deposit:{n}").address)
    answer = env.api.get("/export", f"owner={owner.address}", session=key)
    assert answer.status == 200, answer.body[:300]
    rows = list(csv.DictReader(io.StringIO(answer.text, newline="")))
    described = sorted(r["description"] for r in rows if r["record"] == "invoice")
    assert described == sorted(["'\n=1+2", "'\r=1+2", "'\r\n@SUM(A1)", "plain"])


def _challenge(env: Env, address: str) -> Any:
    return env.api.post("/invoice/challenge", {"address": address})


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("difficulty", [0, 4])
def test_a_challenge_is_stored_only_when_proof_of_work_is_on(
    make_tenants: Any, backend: str, difficulty: int
) -> None:
    env: Env = make_tenants(backend, pow_difficulty=difficulty)
    issued = [_challenge(env, account("m").address).ok() for _ in range(5)]
    assert {c["difficulty"] for c in issued} == {difficulty}
    with env.gateway.storage.transaction() as tx:
        kept = [tx.take_challenge(c["challenge"]) for c in issued]
    assert sum(k is not None for k in kept) == (5 if difficulty else 0)


@pytest.mark.parametrize("backend", BACKENDS)
def test_unauthenticated_writes_are_limited_per_client(make_tenants: Any, backend: str) -> None:
    env: Env = make_tenants(backend, ip_challenge_limit=3, ip_registration_limit=2)
    for _ in range(3):
        _challenge(env, account("m").address).ok()
    refused = _challenge(env, account("m").address)
    refused.error(429, prefix="too many requests: proof-of-work challenges from this address")
    assert refused.headers["retry-after"] == "20"  # 3 a minute: the next one in 20 s

    wallets = [account(f"throwaway:{n}") for n in range(3)]
    keys = [session(f"throwaway:{n}") for n in range(3)]
    for wallet, key in zip(wallets[:2], keys[:2], strict=True):
        env.api.register_key(wallet, key).ok()
    third = env.api.register_key(wallets[2], keys[2])
    third.error(429, prefix="too many requests: session key registrations from this address")
    assert third.headers["retry-after"] == "30"
    with env.gateway.storage.transaction() as tx:  # nothing written for the refused one
        assert not tx.owner_is_known(wallets[2].address)
    env.clock.advance(30)  # the gateway's clock: one more registration is due
    env.api.register_key(wallets[2], keys[2]).ok()
    env.api.register_key(account("throwaway:4"), session("throwaway:4")).error(429)
    # A limit of 0 is no limit.
    free: Env = make_tenants(backend, ip_registration_limit=0, ip_challenge_limit=0)
    for n in range(40):
        free.api.register_key(account(f"free:{n}"), session(f"free:{n}")).ok()
        _challenge(free, account("m").address).ok()
