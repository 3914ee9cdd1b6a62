"""Receipts to the buyer: a mail when an invoice is paid and when a refund of it is
confirmed, in the invoice's language, sent by the e-mail notifier (``notify.email``).

Only invoices created with a ``buyerEmail`` get receipts; the address is kept off the
invoice's wire record (anyone holding its guid reads that), so the notifier reads it from
storage. Each receipt is claimed in storage before it is queued (``claim_notice``), keyed by
the invoice for "paid" and by the refund for "refunded", so it goes out once across
processes and restarts, whatever the number of events that carry the same state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..config import Settings
from ..domain.changes import EventType
from ..domain.invoices import RECEIPT_LANGUAGES
from ..domain.records import Invoice, Json
from ..domain.registry import describe
from ..domain.tokens import NATIVE
from ..storage.contract import Storage

#: Per language: the two subjects and the labels, in the order the body shows them.
TEXTS: Mapping[str, Mapping[str, str]] = {
    "en": {
        "paid": "Receipt: your payment for {what}",
        "refunded": "Receipt: your refund for {what}",
        "intro_paid": "Thank you: your payment was received.",
        "intro_refunded": "Your refund was sent.",
        "invoice": "Invoice",
        "description": "Description",
        "value": "Value",
        "amount": "Amount",
        "refund": "Refunded",
        "to": "To",
        "transaction": "Transaction",
    },
    "de": {
        "paid": "Beleg: Ihre Zahlung für {what}",
        "refunded": "Beleg: Ihre Erstattung für {what}",
        "intro_paid": "Vielen Dank: Ihre Zahlung ist eingegangen.",
        "intro_refunded": "Ihre Erstattung wurde gesendet.",
        "invoice": "Rechnung",
        "description": "Beschreibung",
        "value": "Wert",
        "amount": "Betrag",
        "refund": "Erstattet",
        "to": "An",
        "transaction": "Transaktion",
    },
    "fr": {
        "paid": "Reçu : votre paiement pour {what}",
        "refunded": "Reçu : votre remboursement pour {what}",
        "intro_paid": "Merci : votre paiement a bien été reçu.",
        "intro_refunded": "Votre remboursement a été envoyé.",
        "invoice": "Facture",
        "description": "Description",
        "value": "Valeur",
        "amount": "Montant",
        "refund": "Remboursé",
        "to": "À",
        "transaction": "Transaction",
    },
    "es": {
        "paid": "Recibo: su pago de {what}",
        "refunded": "Recibo: su reembolso de {what}",
        "intro_paid": "Gracias: hemos recibido su pago.",
        "intro_refunded": "Su reembolso ha sido enviado.",
        "invoice": "Factura",
        "description": "Descripción",
        "value": "Valor",
        "amount": "Importe",
        "refund": "Reembolsado",
        "to": "A",
        "transaction": "Transacción",
    },
    "pt": {
        "paid": "Recibo: seu pagamento de {what}",
        "refunded": "Recibo: seu reembolso de {what}",
        "intro_paid": "Obrigado: recebemos o seu pagamento.",
        "intro_refunded": "O seu reembolso foi enviado.",
        "invoice": "Fatura",
        "description": "Descrição",
        "value": "Valor",
        "amount": "Quantia",
        "refund": "Reembolsado",
        "to": "Para",
        "transaction": "Transação",
    },
    "ru": {
        "paid": "Квитанция: ваш платёж за {what}",
        "refunded": "Квитанция: возврат средств за {what}",
        "intro_paid": "Спасибо: ваш платёж получен.",
        "intro_refunded": "Возврат средств отправлен.",
        "invoice": "Счёт",
        "description": "Описание",
        "value": "Стоимость",
        "amount": "Сумма",
        "refund": "Возвращено",
        "to": "Получатель",
        "transaction": "Транзакция",
    },
    "tr": {
        "paid": "Makbuz: {what} için ödemeniz",
        "refunded": "Makbuz: {what} için iadeniz",
        "intro_paid": "Teşekkürler: ödemeniz alındı.",
        "intro_refunded": "İadeniz gönderildi.",
        "invoice": "Fatura",
        "description": "Açıklama",
        "value": "Tutar",
        "amount": "Miktar",
        "refund": "İade edilen",
        "to": "Alıcı",
        "transaction": "İşlem",
    },
    "zh": {
        "paid": "收据：您为 {what} 支付的款项",
        "refunded": "收据：{what} 的退款",
        "intro_paid": "谢谢：我们已收到您的付款。",
        "intro_refunded": "您的退款已发出。",
        "invoice": "账单",
        "description": "说明",
        "value": "金额",
        "amount": "数量",
        "refund": "已退款",
        "to": "收款方",
        "transaction": "交易",
    },
    "ja": {
        "paid": "領収書：{what} のお支払い",
        "refunded": "領収書：{what} の返金",
        "intro_paid": "ありがとうございます。お支払いを受け取りました。",
        "intro_refunded": "返金を送信しました。",
        "invoice": "請求書",
        "description": "説明",
        "value": "金額",
        "amount": "数量",
        "refund": "返金額",
        "to": "送金先",
        "transaction": "取引",
    },
}
assert set(TEXTS) == set(RECEIPT_LANGUAGES)
#: The event types that may call for a receipt.
RECEIPT_EVENTS = frozenset({EventType.PAID.value, EventType.REFUNDED.value})


def _symbol(settings: Settings, chain_id: int, token: str) -> str:
    meta = describe(settings, chain_id, token)
    if meta is not None:
        return meta.symbol
    return "native coin" if token == NATIVE else token


def _body(intro: str, lines: list[tuple[str, Any]]) -> str:
    width = max(len(label) for label, _ in lines) + 2
    rows = "\n".join(f"{label + ':':<{width}}{value}" for label, value in lines)
    return f"{intro}\n\n{rows}\n"


def receipts(
    settings: Settings, invoice: Invoice, payload: Mapping[str, Any]
) -> list[tuple[str, Json]]:
    """The receipts an event of ``invoice`` calls for, each with its once-only key:
    ``invoice.paid`` -> the paid receipt; ``invoice.refunded`` -> one per confirmed refund
    (the key makes those already sent no-ops). Nothing without a buyer e-mail."""
    to = invoice.buyer_email
    kind = getattr(payload, "type", None)
    if to is None or kind not in (EventType.PAID, EventType.REFUNDED):
        return []
    text = TEXTS[invoice.language or RECEIPT_LANGUAGES[0]]
    what = invoice.description or invoice.guid
    vs = invoice.vs_currency.upper()
    head = [(text["invoice"], invoice.guid), (text["description"], invoice.description)]
    if kind == EventType.PAID:
        lines = [*head, (text["value"], f"{payload['value']} {vs}")]
        for payment in payload.get("payments", []):
            symbol = _symbol(settings, invoice.chain_id, payment["token"])
            lines.append((text["amount"], f"{payment['amount']} {symbol}"))
            lines.append((text["transaction"], payment["txHash"]))
        notice = {
            "to": to,
            "subject": text["paid"].format(what=what),
            "body": _body(text["intro_paid"], lines),
        }
        return [(f"receipt:paid:{invoice.guid}", notice)]
    found: list[tuple[str, Json]] = []
    for refund in payload.get("refunds", []):
        if refund.get("status") != "confirmed":
            continue
        symbol = _symbol(settings, invoice.chain_id, refund["token"])
        lines = [
            *head,
            (text["refund"], f"{refund['amount']} {symbol} ({refund['vsValue']} {vs})"),
            (text["to"], refund["to"]),
            (text["transaction"], refund["txHash"]),
        ]
        notice = {
            "to": to,
            "subject": text["refunded"].format(what=what),
            "body": _body(text["intro_refunded"], lines),
        }
        found.append((f"receipt:refund:{refund['id']}", notice))
    return found


class Receipts:
    """The receipts an invoice event calls for, each claimed once in storage: what the mail
    notifier asks the Gateway for (``Gateway.receipts``) before it queues them."""

    def __init__(self, storage: Storage, settings: Settings, now: Callable[[], int]) -> None:
        self._storage = storage
        self.settings = settings
        self.now = now

    def claim(self, payload: Mapping[str, Any]) -> list[Json]:
        """The receipts of this event not sent before; each is claimed as it is returned,
        so it is the caller's to send (a failed send is not retried by a later event)."""
        if getattr(payload, "type", None) not in RECEIPT_EVENTS:
            return []
        with self._storage.transaction() as tx:
            invoice = tx.get_invoice(str(payload["guid"]))
            if invoice is None:
                return []
            now = self.now()
            wanted = receipts(self.settings, invoice, payload)
            return [notice for key, notice in wanted if tx.claim_notice(key, now)]
