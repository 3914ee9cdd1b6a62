"""The page's money and link logic, run in Node on the shipped modules, against Python's Decimal.

What a payer is asked to send must never fall short (rounded up, exact in wei), and the QR
code must only claim an amount when the token, its decimals and its price are all known.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
from decimal import ROUND_CEILING, Decimal, localcontext
from pathlib import Path
from typing import Any

import pytest
from checkout_helpers import CHAIN, DEPOSIT, ETH, UNPRICED, USDT, USDT_ADDRESS

from paycore import NATIVE

pytestmark = pytest.mark.node

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "node" / "checkout_quote.mjs"
CHAINS = {
    str(CHAIN): {"name": "anvil", "symbol": "ETH", "decimals": 18, "kind": "evm"},
    "728126428": {"name": "tron-mainnet", "symbol": "TRX", "decimals": 6, "kind": "tron"},
}
TRON = 728126428
TRON_DEPOSIT = "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8"
TRX = f"{TRON}:{NATIVE}"
USDT_TRON = f"{TRON}:TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"


def node(tasks: list[dict[str, Any]]) -> list[Any]:
    if shutil.which("node") is None:
        if os.environ.get("PAYCORE_REQUIRE_NODE") == "1":
            pytest.fail("PAYCORE_REQUIRE_NODE=1 but node is not installed")
        pytest.skip("node is not installed")
    done = subprocess.run(
        ["node", str(SCRIPT)],
        input=json.dumps({"tasks": tasks}),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answers: list[Any] = json.loads(done.stdout)
    return answers


def invoice(**fields: Any) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "value": "25",
        "paidAmount": "0",
        "status": "init",
        "chainId": CHAIN,
        "address": DEPOSIT,
        "token": ETH,
        "acceptedTokens": [ETH, USDT],
        "data": {},
    }
    wire.update(fields)
    return wire


def quote(inv: dict[str, Any], token: str, prices: dict[str, Any]) -> dict[str, Any]:
    task = {"fn": "quote", "invoice": inv, "tokenId": token, "prices": {"prices": prices}}
    answer: dict[str, Any] = node([{**task, "chains": CHAINS}])[0]
    return answer


def test_native_amount_is_rounded_up_and_exact_in_wei() -> None:
    offer = quote(invoice(value="10"), ETH, {ETH: 3000})
    # 10 / 3000 = 0.00333..., shown with 8 places, rounded up so the payer is never short
    assert offer["amountText"] == "0.00333334"
    assert offer["baseUnits"] == "3333340000000000"
    assert offer["uri"] == f"ethereum:{DEPOSIT}@{CHAIN}?value=3333340000000000"
    assert (offer["exact"], offer["reason"]) == (True, None)


def test_erc20_transfer_link_needs_the_decimals_hint() -> None:
    hinted = invoice(token=USDT, data={"decimals": {USDT: 6}, "symbol": {USDT: "USDT"}})
    offer = quote(hinted, USDT, {USDT: 0.9998})
    assert offer["amountText"] == "25.005002"  # 25 / 0.9998 rounded up at 6 decimals
    assert offer["facts"]["symbol"] == "USDT"
    assert offer["uri"] == (
        f"ethereum:{USDT_ADDRESS}@{CHAIN}/transfer?address={DEPOSIT}&uint256=25005002"
    )
    plain_number_hint = quote(invoice(token=USDT, data={"decimals": 6}), USDT, {USDT: 1})
    assert plain_number_hint["uri"].endswith("&uint256=25000000")

    unknown = quote(invoice(token=USDT), USDT, {USDT: 1})
    assert unknown["amountText"] == "25"  # still shown to the payer
    assert unknown["uri"] == f"ethereum:{DEPOSIT}@{CHAIN}"  # but the code holds the address only
    assert (unknown["exact"], unknown["reason"]) == (False, "decimals")


def test_server_token_info_makes_an_exact_erc20_link_without_hints() -> None:
    """A USDT invoice says "25 USDT" and its QR code is the EIP-681 transfer of 25 * 10**6
    base units, from the invoice's tokenInfo alone; a merchant's wrong hint cannot beat it."""
    info = {USDT: {"symbol": "USDT", "decimals": 6}}
    offer = quote(invoice(token=USDT, tokenInfo=info), USDT, {USDT: 1})
    assert (offer["amountText"], offer["facts"]["symbol"]) == ("25", "USDT")
    assert offer["uri"] == (
        f"ethereum:{USDT_ADDRESS}@{CHAIN}/transfer?address={DEPOSIT}&uint256=25000000"
    )
    assert (offer["exact"], offer["reason"]) == (True, None)
    wrong_hint = invoice(token=USDT, tokenInfo=info, data={"decimals": 18, "symbol": "X"})
    assert quote(wrong_hint, USDT, {USDT: 1})["uri"] == offer["uri"]
    # The native coin's entry reads the same way: an EIP-681 value in wei.
    eth = quote(invoice(tokenInfo={ETH: {"symbol": "ETH", "decimals": 18}}), ETH, {ETH: 2500})
    assert eth["uri"] == f"ethereum:{DEPOSIT}@{CHAIN}?value=10000000000000000"
    # A malformed entry is ignored, never trusted: back to the hint, then to "unknown".
    bad = {USDT: {"symbol": "USDT", "decimals": 6.5}}
    assert quote(invoice(token=USDT, tokenInfo=bad), USDT, {USDT: 1})["reason"] == "decimals"


def test_a_tron_token_is_named_but_its_link_holds_the_address() -> None:
    base = {"chainId": TRON, "address": TRON_DEPOSIT, "token": USDT_TRON}
    info = {USDT_TRON: {"symbol": "USDT", "decimals": 6}}
    offer = quote(invoice(**base, acceptedTokens=[USDT_TRON], tokenInfo=info), USDT_TRON, {})
    assert offer["facts"]["symbol"] == "USDT"
    priced = quote(
        invoice(**base, acceptedTokens=[USDT_TRON], tokenInfo=info), USDT_TRON, {USDT_TRON: 1}
    )
    assert (priced["amountText"], priced["uri"]) == ("25", f"tron:{TRON_DEPOSIT}")


def test_a_number_hint_applies_to_the_display_token_only() -> None:
    offer = quote(invoice(token=ETH, data={"decimals": 6}), USDT, {USDT: 1})
    assert offer["reason"] == "decimals"


def test_partial_payment_asks_for_the_rest() -> None:
    offer = quote(invoice(status="partialPaid", paidAmount="15"), ETH, {ETH: 2000})
    assert (offer["due"], offer["amountText"]) == ("10", "0.005")
    assert offer["baseUnits"] == "5000000000000000"


def test_missing_price_and_tip_jar_show_the_address_only() -> None:
    no_price = quote(invoice(acceptedTokens=[ETH, UNPRICED]), UNPRICED, {ETH: 2000})
    assert (no_price["amountText"], no_price["reason"], no_price["exact"]) == (
        None,
        "price",
        False,
    )
    assert no_price["uri"] == f"ethereum:{DEPOSIT}@{CHAIN}"
    zero_price = quote(invoice(), ETH, {ETH: 0})
    assert zero_price["reason"] == "price"
    tip = quote(invoice(value="0"), ETH, {ETH: 2000})
    assert (tip["due"], tip["amountText"], tip["reason"]) == (None, None, "tip")


def test_tron_links() -> None:
    base = {"chainId": TRON, "address": TRON_DEPOSIT, "token": TRX, "acceptedTokens": [TRX]}
    trx = quote(invoice(**base, value="12"), TRX, {TRX: 0.3})
    assert trx["amountText"] == "40"
    assert trx["uri"] == f"tron:{TRON_DEPOSIT}?amount=40"
    assert trx["facts"]["symbol"] == "TRX" and trx["facts"]["decimals"] == 6
    hinted = {**base, "token": USDT_TRON, "data": {"decimals": 6}}
    trc20 = quote(invoice(**hinted, value="12"), USDT_TRON, {USDT_TRON: 1})
    # no tron: field for the token: a wallet would read "amount=12" as 12 TRX
    assert (trc20["uri"], trc20["reason"], trc20["amountText"]) == (
        f"tron:{TRON_DEPOSIT}",
        "tron-token",
        "12",
    )


def test_amounts_match_python_decimal_on_random_cases() -> None:
    rng = random.Random(681)
    cases: list[tuple[str, str, float, int]] = []
    tasks: list[dict[str, Any]] = []
    for _ in range(300):
        value = str(Decimal(rng.randrange(1, 10**9)).scaleb(-rng.randrange(0, 9)))
        paid = str(Decimal(rng.randrange(0, 10**6)).scaleb(-rng.randrange(0, 6)))
        price = float(f"{rng.uniform(0.0001, 100000):.{rng.randrange(0, 9)}g}") or 1.0
        decimals = rng.choice([0, 2, 6, 8, 9, 18])
        token = USDT
        inv = invoice(
            value=value, paidAmount=paid, token=token, data={"decimals": {token: decimals}}
        )
        cases.append((value, paid, price, decimals))
        tasks.append({"fn": "quote", "invoice": inv, "tokenId": token, "chains": CHAINS})
        tasks[-1]["prices"] = {"prices": {token: price}}
    answers = node(tasks)
    for (value, paid, price, decimals), answer in zip(cases, answers, strict=True):
        due = max(Decimal(value) - Decimal(paid), Decimal(0))
        places = min(decimals, 8)
        with localcontext() as ctx:
            ctx.prec = 200
            # repr(float) is the shortest text that reads back as the same double: what
            # JavaScript's String(number) gives too, so both sides divide by one decimal.
            units = (due / Decimal(repr(price)) * Decimal(10) ** places).to_integral_value(
                ROUND_CEILING
            )
            expected_text = str((units / Decimal(10) ** places).normalize())
            expected_base = int(units) * 10 ** (decimals - places)
        shown = answer["amountText"]
        assert Decimal(shown) == Decimal(expected_text), (value, paid, price, decimals)
        assert "e" not in shown.lower()
        assert due == 0 or Decimal(shown) * Decimal(repr(price)) >= due  # never short
        assert answer["baseUnits"] == (str(expected_base) if expected_base > 0 else "0")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("12.50", "12.5"),
        ("1e-7", "0.0000001"),
        ("1.5e+21", "1500000000000000000000"),
        ("-0.25", "-0.25"),
        (".5", "0.5"),
        ("", None),
        ("abc", None),
        ("1e999", None),
        ("1.2.3", None),
    ],
)
def test_decimal_parsing(text: str, expected: str | None) -> None:
    assert node([{"fn": "parse", "text": text}]) == [expected]


def test_countdown_and_api_urls() -> None:
    answers = node(
        [
            {"fn": "countdown", "seconds": 3723.9},
            {"fn": "countdown", "seconds": -5},
            {"fn": "countdown", "seconds": 90 * 3600},
            {"fn": "apiBase", "url": "https://shop.example/paycore/checkout/?invoice=x"},
            {"fn": "apiBase", "url": "https://shop.example/paycore/checkout?invoice=x"},
            {"fn": "apiBase", "url": "https://shop.example/checkout/"},
            {"fn": "pricesUrl", "url": "https://shop.example/p/checkout/", "currency": None},
            {"fn": "pricesUrl", "url": "https://shop.example/p/checkout/", "currency": "eur"},
        ]
    )
    assert answers[0] == {"text": "1:02:03", "iso": "P0DT1H2M3S"}
    assert answers[1]["text"] == "0:00:00"
    assert answers[2]["text"] == "3 d 18 h 0 min"
    assert answers[3:] == [
        "https://shop.example/paycore/",
        "https://shop.example/paycore/",
        "https://shop.example/",
        "https://shop.example/p/prices",
        "https://shop.example/p/prices?vsCurrency=eur",  # an invoice in EUR reads EUR prices
    ]


def test_a_registry_token_invoice_from_the_gateway_needs_no_hints() -> None:
    """The whole path: POST /invoice with ``1:USDT`` (an alias), the record the page reads,
    the page's quote: "Send 25 USDT", and the EIP-681 transfer in base units."""
    from paycore import Gateway, Settings

    usdt = "1:0xdAC17F958D2ee523a2206206994597C13D831ec7"
    gateway = Gateway(Settings(database_url="memory://", prices={usdt: "1"}), entry_points=False)
    created = gateway.create_invoice(
        DEPOSIT,
        {
            "value": "25",
            "chainId": 1,
            "description": "tee",
            "acceptedTokens": ["1:USDT", "1:ETH"],
            "address": DEPOSIT,
        },
    )
    wire = gateway.invoice_wire(created)
    assert wire["data"] == {} and wire["token"] == usdt
    answer = node(
        [
            {
                "fn": "quote",
                "invoice": wire,
                "tokenId": usdt,
                "chains": CHAINS,
                "prices": {"prices": {usdt: 1}},
            }
        ]
    )[0]
    assert (answer["amountText"], answer["facts"]["symbol"]) == ("25", "USDT")
    assert answer["uri"] == (
        f"ethereum:0xdAC17F958D2ee523a2206206994597C13D831ec7@1/transfer"
        f"?address={DEPOSIT}&uint256=25000000"
    )
