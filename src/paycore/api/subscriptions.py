"""Handlers and routes of subscriptions (docs/subscriptions.md): the owner's session-signed
calls, and the public page a subscriber opens, GET /subscription/{id}."""

from __future__ import annotations

from ..domain.records import Json
from ..subscriptions import requests as rq
from ..subscriptions.page import language, page_headers, subscription_page
from ..subscriptions.service import SubscriptionView
from .http import Response, json_response
from .routing import Call, Route
from .schemas import (
    ADDRESS,
    DECIMAL,
    INTEGER,
    NULLABLE_INTEGER,
    NULLABLE_STRING,
    STRING,
    TOKEN_ID,
    S,
    obj,
)
from .wire import register

for _cls in (rq.NewPlan, rq.NewSubscription, rq.OwnerPage, rq.SubscriptionId, rq.SubscriptionQuery):
    register(_cls)

_NULL_INT: S = NULLABLE_INTEGER
_NULL_STRING: S = NULLABLE_STRING

PLAN = obj(
    [
        "id",
        "owner",
        "createdAt",
        "name",
        "amount",
        "currency",
        "chainId",
        "acceptedTokens",
        "periodUnit",
        "periodCount",
        "trialDays",
        "graceDays",
    ],
    id=STRING,
    owner=ADDRESS,
    createdAt=INTEGER,
    name=STRING,
    amount=DECIMAL,
    currency=STRING,
    chainId=INTEGER,
    acceptedTokens={"type": "array", "items": TOKEN_ID},
    periodUnit={"type": "string", "enum": ["day", "month"]},
    periodCount=INTEGER,
    trialDays=INTEGER,
    graceDays=INTEGER,
)
PERIOD = obj(
    ["index", "startsAt", "endsAt", "dueAt", "guid", "issuedAt", "status"],
    index=INTEGER,
    startsAt=INTEGER,
    endsAt=INTEGER,
    dueAt=INTEGER,
    guid=STRING,
    issuedAt=INTEGER,
    status={"type": "string", "enum": ["open", "paid", "unpaid"]},
)
_STATUS: S = {
    "type": "string",
    "enum": ["trialing", "pending", "active", "past_due", "cancelled"],
}
_SUB_FIELDS: dict[str, S] = {
    "id": STRING,
    "url": {**STRING, "description": "the subscriber's page: GET /subscription/{id}"},
    "owner": ADDRESS,
    "planId": STRING,
    "reference": STRING,
    "email": _NULL_STRING,
    "createdAt": INTEGER,
    "trialEndsAt": INTEGER,
    "status": _STATUS,
    "nextPeriod": INTEGER,
    "nextInvoiceAt": _NULL_INT,
    "updatedAt": INTEGER,
    "cancelledAt": _NULL_INT,
}
SUBSCRIPTION = obj(list(_SUB_FIELDS), **_SUB_FIELDS)
SUBSCRIPTION_DETAIL = obj(
    [*_SUB_FIELDS, "plan", "periods"],
    **_SUB_FIELDS,
    plan=PLAN,
    periods={
        "type": "array",
        "items": {
            **PERIOD,
            "required": [*PERIOD["required"], "invoice"],
            "properties": {
                **PERIOD["properties"],
                "invoice": {"type": "object", "description": "the Invoice record"},
            },
        },
    },
)


def _page_of(items: S) -> S:
    return obj(
        ["items", "total", "offset", "limit"],
        items={"type": "array", "items": items},
        total=INTEGER,
        offset=INTEGER,
        limit=INTEGER,
    )


def _url(call: Call, sub_id: str) -> str:
    """The subscriber's page, beside the checkout page this request resolves to."""
    return call.checkout_url().rstrip("/").rsplit("/", 1)[0] + f"/subscription/{sub_id}"


def create_plan(call: Call) -> Response:
    request = call.read(rq.NewPlan)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    return json_response(call.gateway.subscriptions.create_plan(owner, request).to_wire(), 201)


def list_plans(call: Call) -> Json:
    query = call.read(rq.OwnerPage)
    owner = call.owner_scope(query.owner)
    items, total, off, lim = call.gateway.subscriptions.list_plans(
        owner, offset=query.offset, limit=query.limit
    )
    return {"items": [p.to_wire() for p in items], "total": total, "offset": off, "limit": lim}


def create_subscription(call: Call) -> Response:
    request = call.read(rq.NewSubscription)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    sub = call.gateway.subscriptions.create(owner, request)
    return json_response({**sub.to_wire(), "url": _url(call, sub.id)}, 201)


def list_subscriptions(call: Call) -> Json:
    query = call.read(rq.OwnerPage)
    owner = call.owner_scope(query.owner)
    items, total, off, lim = call.gateway.subscriptions.list(
        owner, offset=query.offset, limit=query.limit
    )
    return {
        "items": [{**s.to_wire(), "url": _url(call, s.id)} for s in items],
        "total": total,
        "offset": off,
        "limit": lim,
    }


def _detail(call: Call, view: SubscriptionView) -> Json:
    gw = call.gateway
    return {
        **view.subscription.to_wire(),
        "url": _url(call, view.subscription.id),
        "plan": view.plan.to_wire(),
        "periods": [
            {**p.to_wire(), "invoice": gw.invoice_wire(view.invoices[p.guid])} for p in view.periods
        ],
    }


def get_subscription(call: Call) -> Json:
    owner = call.owner_scope(call.read(rq.SubscriptionQuery).owner)
    return _detail(call, call.gateway.subscriptions.view(call.params["id"], owner))


def cancel_subscription(call: Call) -> Json:
    request = call.read(rq.SubscriptionId)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    sub = call.gateway.subscriptions.cancel(owner, request.id)
    return {**sub.to_wire(), "url": _url(call, sub.id)}


def subscription_page_(call: Call) -> Response:
    """The subscriber's page: public, by the subscription's unguessable id."""
    gw = call.gateway
    view = gw.subscriptions.view(call.params["id"])
    pay = {guid: str(gw.invoice_wire(inv)["paymentUrl"]) for guid, inv in view.invoices.items()}
    lang = language(call.request.headers.get("accept-language"))
    body = b"" if call.request.method == "HEAD" else subscription_page(view, pay, lang)
    headers = {**page_headers(), "content-language": lang}
    return Response(200, body, "text/html; charset=utf-8", headers)


ROUTES: list[Route] = [
    Route(
        ("POST",),
        "/plan",
        create_plan,
        "Create a subscription plan",
        status=201,
        request=rq.NewPlan,
        response=PLAN,
        errors=(400, 401, 403),
        session="owner",
        idempotent=True,
        soft_mode="session",
    ),
    Route(
        ("GET",),
        "/plans",
        list_plans,
        "The owner's subscription plans, newest first",
        request=rq.OwnerPage,
        response=_page_of(PLAN),
        errors=(400, 401, 403),
        session="owner",
        soft_mode="claimed",
    ),
    Route(
        ("POST",),
        "/subscription",
        create_subscription,
        "Subscribe a customer to a plan",
        status=201,
        request=rq.NewSubscription,
        response=SUBSCRIPTION,
        errors=(400, 401, 403, 404),
        session="owner",
        idempotent=True,
        soft_mode="session",
    ),
    Route(
        ("GET",),
        "/subscriptions",
        list_subscriptions,
        "The owner's subscriptions, newest first",
        request=rq.OwnerPage,
        response=_page_of(SUBSCRIPTION),
        errors=(400, 401, 403),
        session="owner",
        soft_mode="claimed",
    ),
    Route(
        ("GET",),
        "/subscriptions/{id}",
        get_subscription,
        "One of the owner's subscriptions with its plan, its periods and their invoices",
        request=rq.SubscriptionQuery,
        response=SUBSCRIPTION_DETAIL,
        errors=(400, 401, 403, 404),
        session="owner",
        soft_mode="claimed",
    ),
    Route(
        ("POST",),
        "/subscription/cancel",
        cancel_subscription,
        "Cancel a subscription: no further period is invoiced",
        request=rq.SubscriptionId,
        response=SUBSCRIPTION,
        errors=(400, 401, 403, 404, 409),
        session="owner",
        soft_mode="session",
    ),
    Route(
        ("GET",),
        "/subscription/{id}",
        subscription_page_,
        "The subscriber's page: the periods and a link to pay the open one (HTML)",
        errors=(404,),
        session="none",
        media_type="text/html",
        soft_mode="public",
    ),
]
