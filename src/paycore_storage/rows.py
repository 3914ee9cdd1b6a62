"""Records <-> table rows. The only place that knows how a field is laid out in a column.

Payments travel inside the invoice row as JSON. ``Payment.to_wire`` is not used for that on
purpose: the wire form makes ``vsValue`` a float, and storage must not lose a digit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
from sqlalchemy import RowMapping

from paycore.domain.changes import UPDATED
from paycore.domain.records import (
    Deposit,
    Invoice,
    Json,
    OutboxEvent,
    Payment,
    PollToken,
    PowChallenge,
    RateSource,
    Refund,
    RefundStatus,
    SessionKey,
    Status,
    Transaction,
    TxType,
    Valuation,
    WebhookConfig,
)
from paycore.links.records import PaymentLink
from paycore.management.records import AppKey, EmailSetting
from paycore.merchant.profile import MerchantProfile
from paycore.prices.records import ParkedDeposit
from paycore.storage.search import invoice_search_text
from paycore.webhooks.records import ClaimedDelivery, Delivery, DeliveryAttempt, DeliveryStatus

from .decimals import exact, exact_text

Row = RowMapping


def payment_json(payment: Payment) -> Json:
    return {
        "tx_hash": payment.tx_hash,
        "log_index": payment.log_index,
        "chain_id": payment.chain_id,
        "token": payment.token,
        "from": payment.from_,
        "amount": exact_text(payment.amount),
        "vs_value": exact_text(payment.vs_value),
        "timestamp": payment.timestamp,
    }


def payment_from_json(data: Json) -> Payment:
    return Payment(
        tx_hash=data["tx_hash"],
        log_index=data["log_index"],
        chain_id=data["chain_id"],
        token=data["token"],
        from_=data["from"],
        amount=exact(data["amount"]),
        vs_value=exact(data["vs_value"]),
        timestamp=data["timestamp"],
    )


def invoice_row(invoice: Invoice) -> dict[str, Any]:
    return {
        "guid": invoice.guid,
        "created_at": invoice.created_at,
        "deadline": invoice.deadline,
        "status": invoice.status.value,
        "value": invoice.value,
        "token": invoice.token,
        "chain_id": invoice.chain_id,
        "description": invoice.description,
        "address": invoice.address,
        "owner": invoice.owner,
        "accepted_tokens": list(invoice.accepted_tokens),
        "data": invoice.data,
        "paid_amount": invoice.paid_amount,
        "payments": [payment_json(p) for p in invoice.payments],
        "vs_currency": invoice.vs_currency,
        "checkout": invoice.checkout_json(),
        "search_text": invoice_search_text(invoice),
    }


def invoice_state_row(invoice: Invoice) -> dict[str, Any]:
    """The columns a deposit or a deadline changes (``sql._INVOICE_STATE``), as
    :func:`invoice_row` writes them: the watcher updates thousands of invoices a batch and
    needs none of the columns fixed at creation."""
    return {
        "status": invoice.status.value,
        "paid_amount": invoice.paid_amount,
        "payments": [payment_json(p) for p in invoice.payments],
    }


def invoice_from_row(row: Row | Mapping[str, Any]) -> Invoice:
    """From a RowMapping, or from the dict a ``prepared.Prepared`` statement returns."""
    return Invoice(
        guid=row["guid"],
        created_at=row["created_at"],
        deadline=row["deadline"],
        status=Status(row["status"]),
        value=row["value"],
        token=row["token"],
        chain_id=row["chain_id"],
        description=row["description"],
        address=row["address"],
        owner=row["owner"],
        accepted_tokens=tuple(row["accepted_tokens"]),
        data=row["data"],
        paid_amount=row["paid_amount"],
        payments=tuple(payment_from_json(p) for p in row["payments"]),
        vs_currency=row["vs_currency"],
        **_checkout_fields(row.get("checkout")),
    )


def _checkout_fields(stored: Any) -> dict[str, Any]:
    """The checkout column back as Invoice fields; a row from before revision 0012 has none."""
    if not isinstance(stored, Mapping):
        return {}
    return {
        "redirect_url": stored.get("redirectUrl"),
        "cancel_url": stored.get("cancelUrl"),
        "redirect_automatically": bool(stored.get("redirectAutomatically", False)),
        "checkout_url": stored.get("checkoutUrl"),
        "buyer_email": stored.get("buyerEmail"),
        "language": stored.get("language"),
    }


def transaction_row(tx: Transaction) -> dict[str, Any]:
    return {
        "type": tx.type.value,
        "tx_hash": tx.tx_hash,
        "log_index": tx.log_index,
        "chain_id": tx.chain_id,
        "token": tx.token,
        "from_address": tx.from_,
        "to_address": tx.to,
        "amount": tx.amount,
        "vs_value": tx.vs_value,
        "timestamp": tx.timestamp,
        "owner": tx.owner,
        "guid": tx.guid,
        "counted": tx.counted,
        "block_number": tx.block_number,
        "block_hash": tx.block_hash,
        "reorged": tx.reorged,
        **valuation_row(tx.valuation),
    }


def valuation_row(valuation: Valuation | None) -> dict[str, Any]:
    """The rate columns of a transaction row (revision 0011); all NULL without one."""
    if valuation is None:
        return {"rate": None, "rate_source": None, "rate_at": None, "rate_currency": None}
    return {
        "rate": valuation.rate,
        "rate_source": valuation.source,
        "rate_at": valuation.as_of,
        "rate_currency": valuation.vs_currency,
    }


def valuation_from_row(row: Row) -> Valuation | None:
    if row["rate"] is None:
        return None
    return Valuation(row["rate"], row["rate_source"], row["rate_at"], row["rate_currency"])


def transaction_from_row(row: Row) -> Transaction:
    return Transaction(
        type=TxType(row["type"]),
        tx_hash=row["tx_hash"],
        log_index=row["log_index"],
        chain_id=row["chain_id"],
        token=row["token"],
        from_=row["from_address"],
        amount=row["amount"],
        vs_value=row["vs_value"],
        timestamp=row["timestamp"],
        owner=row["owner"],
        to=row["to_address"],
        guid=row["guid"],
        counted=bool(row["counted"]),
        block_number=row["block_number"],
        block_hash=row["block_hash"],
        reorged=bool(row["reorged"]),
        valuation=valuation_from_row(row),
    )


def plain_row(
    record: SessionKey
    | PowChallenge
    | WebhookConfig
    | PollToken
    | AppKey
    | EmailSetting
    | MerchantProfile,
) -> dict[str, Any]:
    """For the records whose table mirrors them field for field."""
    return attrs.asdict(record, recurse=False)


def event_from_row(row: Row) -> OutboxEvent:
    return OutboxEvent(
        id=row["id"],
        owner=row["owner"],
        guid=row["guid"],
        payload=row["payload"],
        created_at=row["created_at"],
        type=row.get("type") or UPDATED,
    )


def delivery_from_row(row: Row) -> Delivery:
    return Delivery(
        id=row["id"],
        webhook_id=row["webhook_id"],
        event_id=row["event_id"],
        owner=row["owner"],
        guid=row["guid"],
        body=row["body"],
        status=DeliveryStatus(row["status"]),
        attempts=row["attempts"],
        created_at=row["created_at"],
        next_attempt_at=row["next_attempt_at"],
        retry_from=row["retry_from"],
        endpoint_id=row.get("endpoint_id"),
    )


def claimed_from_row(row: Row, url: str, secret: str) -> ClaimedDelivery:
    return ClaimedDelivery(
        id=row["id"],
        webhook_id=row["webhook_id"],
        owner=row["owner"],
        guid=row["guid"],
        body=row["body"],
        attempts=row["attempts"],
        retry_from=row["retry_from"],
        lease_token=row["lease_token"],
        lease_until=row["lease_until"],
        url=url,
        secret=secret,
        endpoint_id=row.get("endpoint_id"),
    )


def attempt_row(attempt: DeliveryAttempt) -> dict[str, Any]:
    return attrs.asdict(attempt, recurse=False)


def attempt_from_row(row: Row) -> DeliveryAttempt:
    return DeliveryAttempt(
        delivery_id=row["delivery_id"],
        attempted_at=row["attempted_at"],
        url=row["url"],
        status_code=row["status_code"],
        error=row["error"],
        latency_ms=row["latency_ms"],
    )


def parked_row(parked: ParkedDeposit) -> dict[str, Any]:
    d = parked.deposit
    return {
        "chain_id": d.chain_id,
        "tx_hash": d.tx_hash,
        "log_index": d.log_index,
        "token": d.token,
        "from_address": d.from_,
        "to_address": d.to,
        "amount": d.amount,
        "timestamp": d.timestamp,
        "block_number": d.block_number,
        "block_hash": d.block_hash,
        "reason": parked.reason,
        "parked_at": parked.parked_at,
    }


def parked_from_row(row: Row) -> ParkedDeposit:
    deposit = Deposit(
        chain_id=row["chain_id"],
        tx_hash=row["tx_hash"],
        log_index=row["log_index"],
        token=row["token"],
        from_=row["from_address"],
        to=row["to_address"],
        amount=row["amount"],
        timestamp=row["timestamp"],
        block_number=row["block_number"],
        block_hash=row["block_hash"],
    )
    return ParkedDeposit(deposit, row["reason"], row["parked_at"])


def link_row(link: PaymentLink) -> dict[str, Any]:
    """A new link's row: its rate window starts empty."""
    return {
        "id": link.id,
        "owner": link.owner,
        "created_at": link.created_at,
        "chain_id": link.chain_id,
        "description": link.description,
        "accepted_tokens": list(link.accepted_tokens),
        "token": link.token,
        "vs_currency": link.vs_currency,
        "amount": link.amount,
        "min_amount": link.min_amount,
        "max_amount": link.max_amount,
        "deadline_secs": link.deadline_secs,
        "data": link.data,
        "expires_at": link.expires_at,
        "max_uses": link.max_uses,
        "uses": link.uses,
        "disabled_at": link.disabled_at,
        "window_start": 0,
        "window_opens": 0,
    }


def link_from_row(row: Row) -> PaymentLink:
    return PaymentLink(
        id=row["id"],
        owner=row["owner"],
        created_at=row["created_at"],
        chain_id=row["chain_id"],
        description=row["description"],
        accepted_tokens=tuple(row["accepted_tokens"]),
        token=row["token"],
        vs_currency=row["vs_currency"],
        amount=row["amount"],
        min_amount=row["min_amount"],
        max_amount=row["max_amount"],
        deadline_secs=row["deadline_secs"],
        data=row["data"],
        expires_at=row["expires_at"],
        max_uses=row["max_uses"],
        uses=row["uses"],
        disabled_at=row["disabled_at"],
    )


def refund_row(refund: Refund) -> dict[str, Any]:
    return {
        "id": refund.id,
        "guid": refund.guid,
        "owner": refund.owner,
        "chain_id": refund.chain_id,
        "token": refund.token,
        "to_address": refund.to,
        "amount": refund.amount,
        "vs_value": refund.vs_value,
        "rate": refund.rate,
        "rate_source": refund.rate_source.value,
        "status": refund.status.value,
        "created_at": refund.created_at,
        "tx_hash": refund.tx_hash,
        "log_index": refund.log_index,
        "settled_at": refund.settled_at,
    }


def refund_from_row(row: Row | Mapping[str, Any]) -> Refund:
    return Refund(
        id=row["id"],
        guid=row["guid"],
        owner=row["owner"],
        chain_id=row["chain_id"],
        token=row["token"],
        to=row["to_address"],
        amount=row["amount"],
        vs_value=row["vs_value"],
        rate=row["rate"],
        rate_source=RateSource(row["rate_source"]),
        status=RefundStatus(row["status"]),
        created_at=row["created_at"],
        tx_hash=row["tx_hash"],
        log_index=row["log_index"],
        settled_at=row["settled_at"],
    )
