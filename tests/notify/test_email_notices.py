"""Deposit and withdrawal e-mails, sent to a real SMTP server (aiosmtpd) on loopback.

The owner stores an address with a salt-signed /setEmailNotifications; nothing is sent until
the operator enables it; then each deposit and each recorded withdrawal is mailed once, to
that address, with what the merchant needs to recognise it.
"""

from __future__ import annotations

import logging
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from mgmt_helpers import account, salted, self_signed, smtp_server, tls_server_kwargs

from paycore import Deposit, Gateway, Settings
from paycore.domain.records import Transaction, TxType
from paycore.errors import NotFound
from paycore.management.service import enable_email
from paycore.notify.email import EmailNotifier

NATIVE = "0x0000000000000000000000000000000000000000"
ETH_1 = f"1:{NATIVE}"
NOW = 1_700_000_000
OWNER = account("owner")
OTHER = account("other")
PAYER = account("payer").address
MAILBOX = "merchant@shop.example"


class Clock:
    def __init__(self) -> None:
        self.now = float(NOW)

    def __call__(self) -> float:
        return self.now


def make_gateway(port: int, clock: Clock, **smtp: Any) -> Gateway:
    settings = Settings(
        database_url="memory://",
        prices={ETH_1: "2000"},
        checkout_url="https://pay.example.test/checkout",
        smtp_host=smtp.pop("smtp_host", "127.0.0.1"),
        smtp_port=port,
        smtp_from="payments@gateway.example",
        smtp_starttls=smtp.pop("smtp_starttls", False),
        **smtp,
    )
    return Gateway(settings, entry_points=False, clock=clock)


def notifier(gateway: Gateway) -> EmailNotifier:
    found = [n for n in gateway.notifiers if isinstance(n, EmailNotifier)]
    assert len(found) == 1, gateway.notifiers
    return found[0]


def invoice(gateway: Gateway, owner: str, n: int) -> Any:
    return gateway.create_invoice(
        owner,
        {
            "value": "100",
            "chainId": 1,
            "description": f"order {n}",
            "acceptedTokens": [ETH_1],
            "address": "0x" + f"{0xD000 + n:040x}",
        },
    )


def deposit(gateway: Gateway, to: str, amount: str, n: int) -> None:
    gateway.record_deposit(
        Deposit(
            chain_id=1,
            tx_hash="0x" + f"{n:064x}",
            log_index=n,
            token=NATIVE,
            from_=PAYER,
            to=to,
            amount=Decimal(amount),
            timestamp=gateway.now(),
        )
    )


def store_email(gateway: Gateway, signer: Any, email: str = MAILBOX) -> Any:
    body = salted(signer, {"emailAddress": email, "chainId": 1}, gateway.now())
    return gateway.management.set_email_notifications(body)


def test_a_deposit_is_mailed_once_only_after_the_operator_enabled_it() -> None:
    clock = Clock()
    with smtp_server() as (inbox, port):
        gateway = make_gateway(port, clock)
        mailer = notifier(gateway)
        first = invoice(gateway, OWNER.address, 1)
        assert store_email(gateway, OWNER)["enabled"] is False

        deposit(gateway, first.address, "0.01", 1)  # stored but not enabled: no mail
        assert mailer.flush() and inbox.messages == []

        clock.now += 60
        [setting] = enable_email(gateway, OWNER.address)
        assert setting.enabled and setting.enabled_at == NOW + 60
        clock.now += 60
        deposit(gateway, first.address, "0.02", 2)
        assert mailer.flush()
        [(recipients, message)] = inbox.wait_for(1)
        assert recipients == [MAILBOX]
        assert message["To"] == MAILBOX and message["From"] == "payments@gateway.example"
        assert message["Subject"] == f"Deposit received: 0.02 ETH for invoice {first.guid}"
        text = message.get_content()
        for expected in (
            first.guid,
            "0x" + f"{2:064x}",
            "40 USD",  # 0.02 ETH at 2000
            "partialPaid",
            "60 of 100 USD",  # both deposits count, only the new one is announced
            PAYER,
            "order 1",
        ):
            assert expected in text, (expected, text)

        # The lazy expiry re-emits the invoice with both payments: nothing is mailed again.
        clock.now += 91 * 3600
        assert gateway.get_invoice(first.guid).status.value == "expired"
        assert mailer.flush()
        time.sleep(0.2)
        assert len(inbox.messages) == 1
        gateway.close()


def test_only_enabled_owners_and_chains_are_mailed() -> None:
    clock = Clock()
    with smtp_server() as (inbox, port):
        gateway = make_gateway(port, clock)
        mailer = notifier(gateway)
        mine, theirs = invoice(gateway, OWNER.address, 1), invoice(gateway, OTHER.address, 2)
        store_email(gateway, OWNER)
        store_email(gateway, OTHER, "other@shop.example")
        enable_email(gateway, OWNER.address, 1)
        with pytest.raises(NotFound):
            enable_email(gateway, OWNER.address, 137)  # no address stored there
        clock.now += 1
        deposit(gateway, theirs.address, "0.01", 1)
        deposit(gateway, mine.address, "0.01", 2)
        assert mailer.flush()
        messages = inbox.wait_for(1)
        time.sleep(0.2)
        assert [recipients for recipients, _ in inbox.messages] == [[MAILBOX]]
        assert messages[0][1]["Subject"].endswith(mine.guid)
        gateway.close()


def test_a_new_address_needs_the_operator_again() -> None:
    clock = Clock()
    with smtp_server() as (inbox, port):
        gateway = make_gateway(port, clock)
        invoice(gateway, OWNER.address, 1)
        store_email(gateway, OWNER)
        enable_email(gateway, OWNER.address)
        clock.now += 1
        assert store_email(gateway, OWNER)["enabled"] is True  # the same address: kept on
        clock.now += 1
        assert store_email(gateway, OWNER, "new@shop.example")["enabled"] is False
        gateway.close()


def withdrawal(n: int, owner: str) -> Transaction:
    return Transaction(
        type=TxType.WITHDRAW,
        tx_hash="0x" + f"{0xABC0 + n:064x}",
        log_index=0,
        chain_id=1,
        token=NATIVE,
        from_="0x" + "5" * 40,
        amount=Decimal("1.5"),
        vs_value=Decimal("3000"),
        timestamp=NOW,
        owner=owner,
        to="0x" + "6" * 40,
    )


def test_a_recorded_withdrawal_is_mailed_once() -> None:
    clock = Clock()
    with smtp_server() as (inbox, port):
        gateway = make_gateway(port, clock)
        mailer = notifier(gateway)
        invoice(gateway, OWNER.address, 1)
        store_email(gateway, OWNER)
        enable_email(gateway, OWNER.address)
        gateway.notify_transactions([withdrawal(1, OWNER.address), withdrawal(2, OTHER.address)])
        gateway.notify_transactions([withdrawal(1, OWNER.address)])  # seen again: not re-sent
        assert mailer.flush()
        [(recipients, message)] = inbox.wait_for(1)
        time.sleep(0.2)
        assert len(inbox.messages) == 1 and recipients == [MAILBOX]
        assert message["Subject"] == f"Withdrawal sent: 1.5 ETH to 0x{'6' * 40}"
        assert "0x" + f"{0xABC1:064x}" in message.get_content()
        assert "3000 USD" in message.get_content()
        assert "\nFrom wallet: 0x" + "5" * 40 in message.get_content()  # not ">From"
        gateway.close()


def test_starttls_and_login_and_the_password_is_never_logged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    made = self_signed(tmp_path)
    if made is None:
        pytest.skip("the openssl command is not installed")
    cert, key = made
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # the client trusts the test certificate
    logins: list[tuple[str, str]] = []
    clock = Clock()
    caplog.set_level(logging.DEBUG)
    with smtp_server(**tls_server_kwargs(cert, key, logins)) as (inbox, port):
        wrong = make_gateway(
            port,
            clock,
            smtp_host="localhost",
            smtp_starttls=True,
            smtp_user="mailer",
            smtp_password="wrong-pw-123",
            smtp_timeout=5,
        )
        monkeypatch.setattr("paycore.notify.email.RETRY_DELAYS", (0.0,))
        invoice(wrong, OWNER.address, 1)
        store_email(wrong, OWNER)
        enable_email(wrong, OWNER.address)
        clock.now += 1
        wrong.notify_transactions([withdrawal(1, OWNER.address)])
        assert notifier(wrong).flush()
        assert inbox.messages == [] and logins[-1] == ("mailer", "wrong-pw-123")
        assert "dropped" in caplog.text
        wrong.close()

        right = make_gateway(
            port,
            clock,
            smtp_host="localhost",
            smtp_starttls=True,
            smtp_user="mailer",
            smtp_password="s3cret-pw",
        )
        invoice(right, OWNER.address, 1)
        store_email(right, OWNER)
        enable_email(right, OWNER.address)
        clock.now += 1
        right.notify_transactions([withdrawal(1, OWNER.address)])
        assert notifier(right).flush()
        [(recipients, _message)] = inbox.wait_for(1)
        assert recipients == [MAILBOX] and logins[-1] == ("mailer", "s3cret-pw")
        assert "s3cret-pw" not in repr(right.settings)
        right.close()
    assert "s3cret-pw" not in caplog.text and "wrong-pw-123" not in caplog.text


def test_without_smtp_host_there_is_no_mailer() -> None:
    gateway = Gateway(Settings(database_url="memory://"), entry_points=False)
    assert not any(isinstance(n, EmailNotifier) for n in gateway.notifiers)
    blocked = Gateway(
        Settings(database_url="memory://", smtp_host="127.0.0.1", blocked_plugins=("email",)),
        entry_points=False,
    )
    assert not any(isinstance(n, EmailNotifier) for n in blocked.notifiers)
