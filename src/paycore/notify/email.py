"""E-mail notices of deposits and withdrawals (POST /setEmailNotifications), over SMTP.

A notifier plugin (``paycore.notify``), registered through the ``paycore_notifiers`` hook
under the plugin name ``email`` when ``Settings.smtp_host`` is set. It mails an owner only
where the owner stored an address for the chain and the operator enabled it
(``paycore.management.service.enable_email``).

It also mails the buyer's receipts (``notify.receipts``): when an invoice created with a
``buyerEmail`` is paid, and when a refund of it is confirmed -- whatever the owner's own
notice settings, since the buyer asked for them through the merchant.

What is mailed to the owner, and once only:
- a deposit: every payment of a changed invoice that has not been announced yet -- the
  change that attributed it; the same payment riding along on a later change (expiry, a
  further payment) is not announced again;
- a withdrawal: every withdraw transaction the watcher records.
"Once" holds across processes and restarts: each notice is claimed in storage
(``claim_notice``) before it is queued. Payments older than the moment the operator turned
sending on are not announced, so enabling does not mail the owner's history.

Sending happens on one background thread per notifier, never on the caller's: the caller
is the watcher, which must not stall on a slow mail server. A message that still fails
after a few tries is logged (recipient and error, never the password) and dropped -- the
e-mail is a courtesy, and the event itself stays in the outbox, on the webhook and in
GET /transactions.
"""

from __future__ import annotations

import logging
import queue
import smtplib
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from email import policy
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import TYPE_CHECKING, Any

from ..config import Settings
from ..domain.records import Json
from ..domain.registry import describe
from ..domain.tokens import NATIVE
from ..plugins.hookspecs import RegisterNotifier, hookimpl
from .contract import BaseNotifier

if TYPE_CHECKING:
    from ..management.service import Management
    from .contract import NotifierHost
    from .receipts import Receipts

log = logging.getLogger("paycore.email")

#: Delays before the 2nd and 3rd try of one message.
RETRY_DELAYS = (1.0, 5.0)

Sender = Callable[[EmailMessage], None]


def smtp_sender(settings: Settings) -> Sender:
    """Send one message with stdlib smtplib: STARTTLS when configured, then login when a
    user is set. No debug output: smtplib's would print the AUTH exchange."""

    def send(message: EmailMessage) -> None:
        assert settings.smtp_host is not None
        with smtplib.SMTP(
            settings.smtp_host, settings.smtp_port, timeout=settings.smtp_timeout
        ) as smtp:
            smtp.ehlo()
            if settings.smtp_starttls:
                smtp.starttls(context=ssl.create_default_context())
                smtp.ehlo()
            if settings.smtp_user:
                smtp.login(settings.smtp_user, settings.smtp_password or "")
            # as_bytes, not send_message: it keeps a body line starting "From " as it is.
            smtp.sendmail(settings.smtp_from, [str(message["To"])], message.as_bytes())

    return send


# -- message text -------------------------------------------------------------------------


def _symbol(settings: Settings, chain_id: int, token: str) -> str:
    """The token's symbol (the native coin's, a configured token's, a registry token's),
    so a notice reads "25 USDT"; an unknown token is named by its address."""
    meta = describe(settings, chain_id, token)
    if meta is not None:
        return meta.symbol
    return "native coin" if token == NATIVE else f"token {token}"


def _message(settings: Settings, to: str, subject: str, lines: list[tuple[str, Any]]) -> Json:
    width = max(len(label) for label, _ in lines) + 2
    body = "\n".join(f"{label + ':':<{width}}{value}" for label, value in lines)
    return {"to": to, "subject": subject, "body": body + "\n\n-- paycore\n"}


def deposit_notice(settings: Settings, to: str, invoice: Mapping[str, Any], payment: Json) -> Json:
    chain_id = int(invoice["chainId"])
    vs = settings.vs_currency.upper()
    amount = f"{payment['amount']} {_symbol(settings, chain_id, payment['token'])}"
    lines = [
        ("Amount", amount),
        ("Value", f"{payment['vsValue']} {vs}"),
        ("Invoice", invoice["guid"]),
        ("Description", invoice.get("description", "")),
        ("Status", invoice["status"]),
        ("Paid so far", f"{invoice['paidAmount']} of {invoice['value']} {vs}"),
        ("Chain", chain_id),
        ("Deposit address", invoice["address"]),
        ("From", payment["from"]),
        ("Transaction", payment["txHash"]),
    ]
    subject = f"Deposit received: {amount} for invoice {invoice['guid']}"
    return _message(settings, to, subject, lines)


def withdrawal_notice(settings: Settings, to: str, item: Mapping[str, Any]) -> Json:
    chain_id = int(item["chainId"])
    amount = f"{item['amount']} {_symbol(settings, chain_id, item['token'])}"
    lines = [
        ("Amount", amount),
        ("Value", f"{item['vsValue']} {settings.vs_currency.upper()}"),
        ("To", item.get("to", "")),
        ("From wallet", item["from"]),
        ("Chain", chain_id),
        ("Transaction", item["txHash"]),
    ]
    return _message(settings, to, f"Withdrawal sent: {amount} to {item.get('to', '')}", lines)


#: CRLF line ends as SMTP wants; headers folded only past RFC 5322's 998 characters, so a
#: subject that names an address is not split where some mail readers would show the seam.
MAIL_POLICY = policy.SMTP.clone(max_line_length=998)


def build_message(settings: Settings, notice: Mapping[str, str]) -> EmailMessage:
    message = EmailMessage(policy=MAIL_POLICY)
    message["From"] = settings.smtp_from
    message["To"] = notice["to"]
    message["Subject"] = notice["subject"]
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(domain=settings.smtp_from.rpartition("@")[2] or None)
    message.set_content(notice["body"])
    return message


# -- the notifier --------------------------------------------------------------------------


class EmailNotifier(BaseNotifier):
    """``paycore.notify.Notifier`` that mails deposits and withdrawals to enabled owners."""

    name = "email"

    def __init__(self, settings: Settings, *, sender: Sender | None = None) -> None:
        self.settings = settings
        self.sender = sender or smtp_sender(settings)
        #: The bound gateway's management records, where notices are claimed once.
        self.management: Management | None = None
        #: The bound gateway's receipts service (``notify.receipts``).
        self.receipts: Receipts | None = None
        self._queue: queue.Queue[EmailMessage | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def bind(self, gateway: NotifierHost) -> None:
        """Called by the Gateway once built: the notifier claims notices through
        ``Gateway.management``, the one part of it the notifier keeps."""
        self.management = gateway.management
        self.receipts = gateway.receipts

    # -- Notifier -------------------------------------------------------------------------
    def invoice_changed(self, owner: str, payload: Json) -> None:
        management = self.management
        if management is None:
            return
        if self.receipts is not None:  # the buyer's receipts, when the invoice asks for them
            for notice in self.receipts.claim(payload):
                self._send_later(notice)
        if not payload.get("payments"):
            return
        by_key: dict[str, Json] = {
            "deposit:{chainId}:{txHash}:{logIndex}:{token}".format(**payment): payment
            for payment in payload["payments"]
        }
        found = management.claim_email_notices(
            owner,
            int(payload["chainId"]),
            [(key, int(payment["timestamp"])) for key, payment in by_key.items()],
        )
        if found is None:
            return
        setting, claimed = found
        for key in claimed:
            self._send_later(deposit_notice(self.settings, setting.email, payload, by_key[key]))

    def transaction_recorded(self, owner: str, item: Json) -> None:
        """A transaction newly recorded for ``owner`` (GET /transactions' item form)."""
        management = self.management
        if management is None or item.get("type") != "withdraw":
            return
        key = "withdraw:{chainId}:{txHash}:{logIndex}:{token}".format(**item)
        found = management.claim_email_notices(owner, int(item["chainId"]), [(key, None)])
        if found is None or not found[1]:
            return
        self._send_later(withdrawal_notice(self.settings, found[0].email, item))

    # -- the sending thread ---------------------------------------------------------------
    def _send_later(self, notice: Mapping[str, str]) -> None:
        self._queue.put(build_message(self.settings, notice))
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="paycore-email", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            message = self._queue.get()
            try:
                if message is None:
                    return
                self._deliver(message)
            finally:
                self._queue.task_done()

    def _deliver(self, message: EmailMessage) -> None:
        for attempt, delay in enumerate((0.0, *RETRY_DELAYS)):
            time.sleep(delay)
            try:
                self.sender(message)
                return
            except Exception as exc:  # a mail server's refusal must not kill the thread
                error = f"{type(exc).__name__}: {exc}"
                log.warning(
                    "e-mail to %s failed (try %d): %s", message["To"], attempt + 1, error[:300]
                )
        log.error("e-mail to %s dropped: %s", message["To"], message["Subject"])

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until every queued message was sent or dropped; ``False`` on timeout."""
        deadline = time.monotonic() + timeout
        while self._queue.unfinished_tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def close(self) -> None:
        """Let the thread finish what is queued and stop."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                self._queue.put(None)
                self._thread.join(timeout=60)
            self._thread = None


@hookimpl
def paycore_notifiers(settings: Settings, register: RegisterNotifier) -> None:
    """Mail notices only where an SMTP server is configured."""
    if settings.smtp_host:
        register(EmailNotifier(settings))
