"""The route table: every endpoint of SPEC.md, its handler, and its OpenAPI description.

Paths are relative to the adapter's mount prefix. Adding an endpoint means adding one row
here; both adapters and the OpenAPI document pick it up.
"""

from __future__ import annotations

from . import events, invoices, schemas, sessions, wallet, webhooks
from .routing import Route, Router

GET_POST = ("GET", "POST")
OWNER_Q = ("owner", "string", False, "merchant address; must match the session key's owner")
PAGE_Q = [
    ("offset", "integer", False, "zero-based cursor"),
    ("limit", "integer", False, "page size"),
]

ROUTES: list[Route] = [
    Route(
        ("POST",),
        "/invoice",
        invoices.create_invoice,
        "Create an invoice",
        status=201,
        request_body=schemas.CREATE_INVOICE,
        response=schemas.INVOICE,
        errors=(400, 401, 403),
        session="owner",
    ),
    Route(
        ("POST",),
        "/invoice/challenge",
        invoices.invoice_challenge,
        "Get a proof-of-work challenge for invoice creation",
        request_body=schemas.ADDRESS_BODY,
        response=schemas.CHALLENGE,
        errors=(400,),
    ),
    Route(
        ("GET",),
        "/invoice/{guid}",
        invoices.get_invoice,
        "Read an invoice (lazy expiry)",
        response=schemas.INVOICE,
        errors=(401, 404),
    ),
    Route(
        ("GET",),
        "/invoices",
        invoices.list_invoices,
        "List invoices by owner or address",
        query=[
            OWNER_Q,
            ("address", "string", False, "deposit address (public lookup)"),
            ("chainId", "integer", False, "required with address"),
            *PAGE_Q,
        ],
        response={"oneOf": [{"type": "array", "items": schemas.INVOICE}, schemas.INVOICE_PAGE]},
        errors=(400, 401, 403),
        session="owner",
    ),
    Route(
        ("GET",),
        "/transactions",
        invoices.list_transactions,
        "Deposits and withdrawals",
        query=[OWNER_Q, ("chainId", "integer", False, "one chain only"), *PAGE_Q],
        response=schemas.TRANSACTION_PAGE,
        errors=(400, 401, 403),
        session="owner",
    ),
    Route(("GET",), "/prices", invoices.prices, "The price snapshot", response=schemas.PRICES),
    Route(
        ("POST",),
        "/poll/events",
        events.poll_events,
        "Drain queued invoice events",
        request_body=schemas.POLL_EVENTS_BODY,
        response=schemas.EVENTS,
        errors=(400, 401),
        session="owner",
    ),
    Route(
        ("POST",),
        "/poll/register",
        events.poll_register,
        "Legacy: get a polling token",
        request_body=schemas.POLL_REGISTER,
        response=schemas.POLL_TOKEN,
        errors=(400, 401),
        session="none",
    ),
    Route(
        ("POST",),
        "/auth/register-pubkey",
        sessions.register,
        "Register a session key",
        request_body=schemas.REGISTER_PUBKEY,
        response=schemas.REGISTERED,
        errors=(400, 401, 403, 409),
        session="none",
    ),
    Route(
        ("POST",),
        "/auth/deregister-pubkey",
        sessions.deregister,
        "Remove a session key",
        request_body=schemas.DEREGISTER_PUBKEY,
        response=schemas.DEREGISTERED,
        errors=(400, 401, 403, 404),
    ),
    Route(
        ("GET",),
        "/auth/pubkeys",
        sessions.pubkeys,
        "An owner's session keys",
        query=[("owner", "string", True, "merchant address")],
        response=schemas.PUBKEYS,
        errors=(400, 401, 403),
        session="owner",
    ),
    Route(
        ("POST",),
        "/auth/register-callback",
        sessions.register_callback,
        "Set the webhook URL with a session key",
        request_body=schemas.CALLBACK,
        response=schemas.OWNER_URL,
        errors=(400, 401, 403),
        session="owner",
    ),
    Route(
        ("POST",),
        "/webhook/set",
        webhooks.set_,
        "Set the webhook URL (wallet-signed)",
        request_body=schemas.WEBHOOK_SET,
        response=schemas.WEBHOOK,
        errors=(400, 401),
        session="none",
    ),
    Route(
        ("POST",),
        "/webhook/get",
        webhooks.get,
        "Read the webhook URL (wallet-signed)",
        request_body=schemas.WEBHOOK_OWNER,
        response=schemas.WEBHOOK,
        errors=(400, 401),
        session="none",
    ),
    Route(
        ("POST",),
        "/webhook/clear",
        webhooks.clear,
        "Remove the webhook (wallet-signed)",
        request_body=schemas.WEBHOOK_OWNER,
        response=schemas.REMOVED,
        errors=(400, 401),
        session="none",
    ),
    # -- smart-wallet and withdrawal helpers: GET (query) or POST (JSON body) -----------------
    Route(
        GET_POST,
        "/getAddress",
        wallet.get_address,
        "A deposit address (or the wallet itself), computed offline",
        request_body=schemas.GET_ADDRESS,
        response=schemas.DEPOSIT_ADDRESS,
        errors=(400,),
    ),
    Route(
        GET_POST,
        "/initWallet",
        wallet.init_wallet,
        "The unsigned transaction that deploys the owner's wallet",
        request_body=schemas.OWNER_CHAIN,
        response=schemas.INIT_WALLET_TX,
        errors=(400, 502),
    ),
    Route(
        GET_POST,
        "/deployWallet",
        wallet.deploy_wallet,
        "Relay a signed wallet deployment (to the factory only)",
        request_body=schemas.DEPLOY_WALLET,
        response=schemas.DEPLOYED,
        errors=(400, 502),
    ),
    Route(
        GET_POST,
        "/getBalances",
        wallet.get_balances,
        "Balances of the owner's wallet and deposit addresses, per token",
        request_body=schemas.OWNER_CHAIN,
        response=schemas.BALANCES,
        errors=(400, 401, 403, 502),
        session="owner",
    ),
    Route(
        GET_POST,
        "/initWithdraw",
        wallet.init_withdraw,
        "The unsigned withdrawal transaction (fee in msg.value)",
        request_body=schemas.INIT_WITHDRAW,
        response=schemas.INIT_WITHDRAW_TX,
        errors=(400, 401, 403, 502),
        session="owner",
    ),
    Route(
        GET_POST,
        "/history",
        wallet.history,
        "The owner's deposits and withdrawals, newest first",
        request_body=schemas.HISTORY_QUERY,
        response=schemas.HISTORY,
        errors=(400, 401, 403),
        session="owner",
    ),
    Route(
        GET_POST,
        "/withdraw",
        wallet.withdraw,
        "Deprecated: use /initWithdraw",
        errors=(410,),
    ),
    Route(
        GET_POST,
        "/getFaucet",
        wallet.get_faucet,
        "Dev chains (1337, 31337) only: native coin from the operator's dev key",
        request_body=schemas.FAUCET,
        response=schemas.FAUCET_SENT,
        errors=(400, 502),
    ),
]


def build_router() -> Router:
    from .openapi import openapi_route

    return Router([*ROUTES, openapi_route()])
