"""The served OpenAPI document against the server, through both adapters, with every check
schemathesis has: no 5xx, answers and statuses as documented, schema-violating requests
refused, schema-valid ones accepted, and every 4xx one line of text.

Schema-valid is not always valid: some rules need more than one field or the deployment's
state (which token is the native coin, whether a chain has a wallet backend, a key being a
curve point, a salt within the window). JSON Schema cannot state them, so for the
operations in ``SEMANTIC`` -- each with the rule that makes it so -- a 400 to schema-valid
data is accepted; every other check still runs on them."""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from flask import Flask
from hypothesis import HealthCheck, settings
from litestar import Litestar
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig

from paycore import NATIVE, Gateway, Settings
from paycore_flask import PayCore
from paycore_litestar import PayCoreConfig, PayCorePlugin

pytestmark = pytest.mark.fuzz

PREFIX = "/paycore"
KNOWN_METHODS = {"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "TRACE"}
ETH = f"31337:{NATIVE}"


def gateway(mode: str) -> Gateway:
    return Gateway(
        Settings(database_url="memory://", prices={ETH: "2000"}, auth_mode=mode),
        entry_points=False,
    )


def flask_app(mode: str) -> Flask:
    app = Flask("fuzz")
    PayCore(app, gateway=gateway(mode), prefix=PREFIX)
    return app


def litestar_app(mode: str) -> Litestar:
    return Litestar(plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway(mode), prefix=PREFIX))])


#: A schema-violating request may also be refused for its size: a body over paycore's
#: limit (64 KiB, which schemathesis's longest lists pass) gets 413, the status for it.
REJECTED = SchemathesisConfig().projects.default.checks.negative_data_rejection.expected_statuses
CONFIG = SchemathesisConfig.from_dict(
    {"checks": {"negative_data_rejection": {"expected-statuses": [*REJECTED, "413"]}}}
)
SCHEMAS = {
    "flask-strict": schemathesis.openapi.from_wsgi(
        f"{PREFIX}/openapi.json", flask_app("strict"), config=CONFIG
    ),
    "flask-soft": schemathesis.openapi.from_wsgi(
        f"{PREFIX}/openapi.json", flask_app("soft"), config=CONFIG
    ),
    "litestar-strict": schemathesis.openapi.from_asgi(
        f"{PREFIX}/openapi.json", litestar_app("strict"), config=CONFIG
    ),
    "litestar-soft": schemathesis.openapi.from_asgi(
        f"{PREFIX}/openapi.json", litestar_app("soft"), config=CONFIG
    ),
}


def check(response: Any) -> None:
    status = response.status_code
    sent = response.request
    where = f"{sent.method} {sent.url} {sent.headers} {str(sent.body)[:200]} -> {status}"
    assert status < 500, f"{where}: {response.text[:300]}"
    if sent.method not in KNOWN_METHODS:
        # Methods no router knows (QUERY, made-up ones) are refused by the host framework's
        # own router before paycore sees them; a 405 is all that can be asked of it there.
        assert status == 405, where
        return
    if 400 <= status < 500:
        assert response.headers["content-type"][0].startswith("text/plain"), where
        body = response.text
        assert body and "\n" not in body.strip() and "Traceback" not in body, where


load_all_checks()
ALL_CHECKS = [CHECKS.get_one(name) for name in CHECKS.get_all_names()]
WITHOUT_POSITIVE = [c for c in ALL_CHECKS if c.__name__ != "positive_data_acceptance"]

#: Operations where schema-valid data may still be refused with a 400, and the rule why.
SEMANTIC = {
    "/invoice": "deadlineSecs 1..366 days, acceptedTokens on chainId, token among them",
    "/invoices": "limit at least 1; chainId with address",
    "/transactions": "limit at least 1",
    "/history": "limit at least 1",
    "/auth/register-pubkey": "publicKey must be a point on secp256k1",
    "/auth/deregister-pubkey": "publicKey must be a point on secp256k1",
    "/mevStakingInfo": "lists non-empty; tokens not the native coin; a staking contract set",
    "/mevStake": "value at least 1; token not the native coin; a staking contract set",
    "/mevUnstake": "value at least 1; token not the native coin; a staking contract set",
    "/mevClaim": "tokenList non-empty, not the native coin; a staking contract set",
    "/getAddress": "a chain with a smart-wallet backend; index for deposit addresses",
    "/initWallet": "a chain with a smart-wallet backend",
    "/deployWallet": "a chain with a smart-wallet backend",
    "/getBalances": "a chain with a smart-wallet backend",
    "/initWithdraw": "a chain with a smart-wallet backend; exactly one of amount and value",
    "/getFaucet": "chain 1337 or 31337 with a backend",
    "/disableWalletIndex": "walletIndex at most 2**63 - 1",
    "/enableWalletIndex": "walletIndex at most 2**63 - 1",
    "/addNewAppKey": "appKeyAddress not the zero address",
    "/removeAppKey": "appKeyAddress not the zero address",
    "/setEmailNotifications": "emailAddress a plain address or empty",
    "/changeCallbackUrl": "newCallbackUrl an http(s) URL with a public host",
    "/auth/register-callback": "url an http(s) URL with a public host",
    "/webhook/set": "url an http(s) URL with a public host",
    "/checkout/qr": "data an ethereum: or tron: payment link of URI characters",
    "/prices": "vsCurrency one of the configured currencies",
    "/poll/events": "ownerAddress and token together without session headers",
    "/ws": "a WebSocket upgrade, not plain HTTP",
    "/withdraw": "deprecated: 410 Gone to every request",
    "/refund": "owner in soft mode; one of amount and vsAmount; rateSource payment or now",
    "/refund/cancel": "owner in soft mode without session headers",
    "/webhook/deliveries": "limit at least 1",
    "/webhook/redeliver": "id a JSON integer (2.0 is not one: docs/decisions.md, Typed requests)",
    "/webhook/redeliver-failed": "since a JSON integer, as id above",
    "/webhook/endpoints": "url an http(s) URL with a public host; owner in soft mode",
    "/webhook/endpoints/update": "the id of an existing endpoint of the owner; url as above",
    "/webhook/endpoints/rotate-secret": "the id of an existing endpoint of the owner",
    "/webhook/endpoints/delete": "the id of an existing endpoint of the owner",
    "/export": "to after from; records known kinds, as text without control characters",
    "/links": "limit at least 1",
    "/link": "a chain with an address-deriving backend; amount, or minAmount and maxAmount",
    "/link/{id}": "an existing link that may make an invoice; amount within its bounds",
    "/link/disable": "id as text without control characters",
    "/merchant/profile": "owner in soft mode without session headers; name not blank; "
    "logoUrl an https URL; support an https URL or an e-mail address",
    "/stats": "to after from; owner in soft mode without session headers",
    "/plans": "limit at least 1; owner in soft mode without session headers",
    "/subscriptions": "limit at least 1; owner in soft mode without session headers",
    "/subscriptions/{id}": "owner in soft mode without session headers",
    "/payouts/{id}": "owner in soft mode without session headers",
}


def _make(name: str) -> Any:
    schema = SCHEMAS[name]

    @schema.parametrize()
    @settings(
        max_examples=15,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    def test(case: Any) -> None:
        path = case.operation.path
        checks = WITHOUT_POSITIVE if path in SEMANTIC else ALL_CHECKS
        check(case.call_and_validate(checks=checks))

    return test


test_flask_strict = _make("flask-strict")
test_flask_soft = _make("flask-soft")
test_litestar_strict = _make("litestar-strict")
test_litestar_soft = _make("litestar-soft")


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_document_lists_every_route(name: str) -> None:
    from paycore.api import ROUTES

    paths = set(SCHEMAS[name].raw_schema["paths"])
    assert {r.path for r in ROUTES} <= paths
