"""Where a person reads a token: the invoice record's ``tokenInfo`` and the e-mail notices
name it by symbol from the registry or the configuration, never by guessing."""

from __future__ import annotations

from decimal import Decimal

from paycore import NATIVE, ChainConfig, Deposit, Gateway, Settings
from paycore.config import _default_chains
from paycore.notify.email import deposit_notice, withdrawal_notice

USDT = "0xdAC17F958D2ee523a2206206994597C13D831ec7"
MINE = "0x1111111111111111111111111111111111111111"
UNKNOWN = "0x2222222222222222222222222222222222222222"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
DEPOSIT = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
TRON = 728126428
TRON_USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"


def _settings() -> Settings:
    chains = _default_chains()
    chains[31337] = ChainConfig(
        31337, "anvil", 0, tokens=({"address": MINE, "symbol": "SHOP", "decimals": 2},)
    )
    return Settings(
        database_url="memory://", chains=chains, prices={f"1:{USDT}": "1", f"31337:{MINE}": "1"}
    )


def test_invoice_records_carry_token_info_for_known_tokens_only() -> None:
    gateway = Gateway(_settings(), entry_points=False)
    invoice = gateway.create_invoice(
        OWNER,
        {
            "value": "25",
            "chainId": 31337,
            "description": "tee",
            "acceptedTokens": [f"31337:{MINE}", f"31337:{UNKNOWN}", "31337:ETH"],
            "address": DEPOSIT,
        },
    )
    assert gateway.invoice_wire(invoice)["tokenInfo"] == {
        f"31337:{MINE}": {"symbol": "SHOP", "decimals": 2},
        f"31337:{NATIVE}": {"symbol": "ETH", "decimals": 18},
    }
    tron = gateway.create_invoice(
        OWNER,
        {
            "value": "25",
            "chainId": TRON,
            "description": "tee",
            "acceptedTokens": ["tron:USDT", "tron:TRX"],
            "address": "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8",
        },
    )
    assert gateway.invoice_wire(tron)["tokenInfo"] == {
        f"{TRON}:{TRON_USDT}": {"symbol": "USDT", "decimals": 6},
        f"{TRON}:{NATIVE}": {"symbol": "TRX", "decimals": 6},
    }
    # Events carry the same record: a webhook receiver reads the symbol too.
    changes = gateway.record_deposit(
        Deposit(31337, "0x" + "ab" * 32, 0, MINE, OWNER, DEPOSIT, Decimal(25), gateway.now())
    )
    assert gateway.invoice_wire(changes[-1])["tokenInfo"][f"31337:{MINE}"]["symbol"] == "SHOP"


def test_notices_name_tokens_by_symbol() -> None:
    settings = _settings()
    invoice = {
        "chainId": 1,
        "guid": "g-1",
        "description": "tee",
        "status": "paid",
        "paidAmount": "25",
        "value": "25",
        "address": DEPOSIT,
    }
    payment = {"amount": "25", "token": USDT, "vsValue": 25, "from": OWNER, "txHash": "0xab"}
    notice = deposit_notice(settings, "m@shop.example", invoice, payment)
    assert notice["subject"] == "Deposit received: 25 USDT for invoice g-1"
    unknown = deposit_notice(settings, "m@shop.example", invoice, {**payment, "token": UNKNOWN})
    assert unknown["subject"] == f"Deposit received: 25 token {UNKNOWN} for invoice g-1"
    item = {"amount": "3", "token": MINE, "vsValue": 3, "from": DEPOSIT, "to": OWNER}
    sent = withdrawal_notice(settings, "m@shop.example", {**item, "chainId": 31337, "txHash": "0x"})
    assert sent["subject"] == f"Withdrawal sent: 3 SHOP to {OWNER}"
    native = deposit_notice(settings, "m", {**invoice, "chainId": 56}, {**payment, "token": NATIVE})
    assert native["subject"].startswith("Deposit received: 25 BNB")
