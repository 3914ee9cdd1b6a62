"""A small Litestar API that sells prepaid credit packs and takes crypto through paycore.

Everything except the lines marked ``paycore`` is the service it was before: a plan list and
a plan lookup. paycore adds its HTTP interface under /paycore, and the checkout route asks
the gateway (``app.state.paycore``) for an invoice.

    uvicorn --factory service:create_app        # from this folder
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from litestar import Litestar, get, post
from litestar.datastructures import State
from litestar.exceptions import NotFoundException
from litestar.params import FromPath
from litestar.response import Redirect

from paycore import NATIVE, Gateway, Settings  # paycore
from paycore.errors import InvoiceNotFound  # paycore
from paycore_litestar import PayCoreConfig, PayCorePlugin  # paycore


@dataclass(frozen=True)
class Plan:
    slug: str
    credits: int
    price: Decimal


PLANS = {
    p.slug: p for p in (Plan("starter", 1_000, Decimal("5")), Plan("pro", 25_000, Decimal("99")))
}

CHAIN_ID = 137
POL = f"{CHAIN_ID}:{NATIVE}"
USDC = f"{CHAIN_ID}:0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359"
MERCHANT = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
# A deposit address the merchant controls; omit it from the invoice once a chain backend is
# installed, and paycore derives a fresh one per invoice.
DEPOSIT_ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"


@get("/plans")
async def plans() -> list[dict[str, Any]]:
    return [{"plan": p.slug, "credits": p.credits, "price": str(p.price)} for p in PLANS.values()]


@get("/plans/{slug:str}")
async def plan(slug: FromPath[str]) -> dict[str, Any]:
    found = _plan(slug)
    return {"plan": found.slug, "credits": found.credits, "price": str(found.price)}


def _plan(slug: str) -> Plan:
    try:
        return PLANS[slug]
    except KeyError:
        raise NotFoundException(f"no plan {slug}") from None


# paycore: checkout asks the gateway for an invoice and redirects to its payment page.
# Gateway calls block (storage I/O), so these handlers run in a worker thread.
@post("/plans/{slug:str}/checkout", sync_to_thread=True)
def checkout(slug: FromPath[str], state: State) -> Redirect:
    gateway: Gateway = state.paycore
    found = _plan(slug)
    invoice = gateway.create_invoice(
        MERCHANT,
        {
            "value": str(found.price),
            "chainId": CHAIN_ID,
            "description": f"{found.credits} API credits ({found.slug})",
            "acceptedTokens": [USDC, POL],
            "address": DEPOSIT_ADDRESS,
            "data": {"plan": found.slug},
        },
    )
    return Redirect(gateway.invoice_wire(invoice)["paymentUrl"], status_code=303)


@get("/orders/{guid:str}", sync_to_thread=True)
def order(guid: FromPath[str], state: State) -> dict[str, Any]:
    gateway: Gateway = state.paycore
    try:
        invoice = gateway.get_invoice(guid)
    except InvoiceNotFound:
        raise NotFoundException(f"no order {guid}") from None
    return {"order": guid, "plan": invoice.data.get("plan"), "status": invoice.status.value}


def create_app(settings: Settings | None = None) -> Litestar:
    settings = settings or Settings(
        database_url=os.environ.get("SERVICE_DATABASE_URL", "sqlite:///service.sqlite3"),
        checkout_url="https://pay.example.com/checkout",
        prices={POL: "0.5", USDC: "1"},
    )
    return Litestar(
        [plans, plan, checkout, order],
        plugins=[PayCorePlugin(PayCoreConfig(settings=settings))],  # paycore
    )
