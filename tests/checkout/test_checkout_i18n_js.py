"""The page's language choice, its catalogues and its wallet transaction, run in Node on the
shipped modules: every catalogue has every key with the same placeholders, ?lang= beats
the browser's list, and the wallet is asked for exactly the link's amount."""

from __future__ import annotations

import re

import pytest
from checkout_helpers import DEPOSIT, ETH, USDT, USDT_ADDRESS
from test_checkout_quote_js import CHAINS, invoice, node

pytestmark = pytest.mark.node

LANGUAGES = {"en", "de", "es", "fr", "pt", "ru", "tr", "zh", "ja"}


def test_every_catalogue_has_every_key_with_the_same_placeholders() -> None:
    [catalogues] = node([{"fn": "catalogues"}])
    assert set(catalogues) == LANGUAGES
    english = catalogues["en"]
    for language, messages in catalogues.items():
        assert messages.keys() == english.keys(), language
        for key, text in messages.items():
            wanted = set(re.findall(r"\{(\w+)\}", english[key]))
            assert set(re.findall(r"\{(\w+)\}", text)) == wanted, (language, key)
            assert text.strip(), (language, key)
        if language != "en":  # translated, not copied (a few words are the same everywhere)
            same = [k for k in english if messages[k] == english[k]]
            assert len(same) <= 4, (language, same)


@pytest.mark.parametrize(
    ("asked", "preferred", "language", "locale"),
    [
        ("de", ["ja-JP"], "de", "de"),  # ?lang= first
        (None, ["xx-YY", "ja-JP", "de"], "ja", "ja-JP"),  # the first known one, region kept
        ("pt-br", [], "pt", "pt-BR"),  # canonical case
        ("klingon!", ["es-ES"], "es", "es-ES"),  # a malformed ?lang= is passed over
        (None, ["sv-SE"], "en", "en"),  # nothing known: English
        ("ZH-hans-CN", [], "zh", "zh-Hans-CN"),
    ],
)
def test_the_language_is_chosen_from_lang_then_the_browser(
    asked: str | None, preferred: list[str], language: str, locale: str
) -> None:
    [chosen] = node([{"fn": "language", "asked": asked, "preferred": preferred}])
    assert chosen == {"language": language, "locale": locale}


def test_translation_fills_placeholders_and_falls_back_to_english() -> None:
    answers = node(
        [
            {"fn": "translate", "language": "de", "key": "invoiceId", "vars": {"id": "x1"}},
            {"fn": "translate", "language": "xx", "key": "statusPaid", "vars": {}},
            {"fn": "translate", "language": "ja", "key": "noSuchKey", "vars": {}},
            {"fn": "around", "template": "{network} の入金アドレス", "name": "network"},
        ]
    )
    assert answers == ["Rechnung x1", "Paid", "noSuchKey", ["", " の入金アドレス"]]


def test_the_wallet_is_asked_for_the_links_exact_amount() -> None:
    payer = "0x90F79bf6EB2c4f870365E96051604E789dF1c7f6"
    prices = {"vsCurrency": "usd", "fetchedAt": 1, "prices": {ETH: "2000", USDT: "1"}}
    common = {"from": payer, "deposit": DEPOSIT, "prices": prices, "chains": CHAINS}
    wire = invoice(acceptedTokens=[ETH, USDT], data={"decimals": {USDT: 6}})
    coin, token, data = node(
        [
            {"fn": "walletTx", **common, "invoice": wire, "tokenId": ETH},
            {"fn": "walletTx", **common, "invoice": wire, "tokenId": USDT},
            {"fn": "transferData", "to": DEPOSIT, "units": "25000000"},
        ]
    )
    # 0.0125 ETH; the transaction names its chain, so a wallet on another one refuses it
    assert coin == {"from": payer, "to": DEPOSIT, "value": hex(125 * 10**14), "chainId": "0x7a69"}
    assert token["to"] == USDT_ADDRESS and token["value"] == "0x0"
    assert token["chainId"] == hex(31337)
    assert token["data"] == data
    assert data == "0xa9059cbb" + DEPOSIT[2:].lower().rjust(64, "0") + f"{25_000_000:064x}"


def test_every_outcome_beyond_the_status_is_named() -> None:
    """Overpaid, paid late, part paid then expired, and a payment the page saw that the
    record no longer has (a reorg): outcome.js names each with the amounts the page words."""

    def payment(tx: str, amount: str, at: int) -> dict[str, object]:
        return {
            "txHash": tx,
            "logIndex": -1,
            "chainId": "31337",
            "token": "0x0",
            "amount": amount,
            "timestamp": at,
        }

    one, two = payment("0xA1", "0.01", 50), payment("0xb2", "0.0075", 150)
    cases = [
        {
            "invoice": invoice(status="paid", value="25", paidAmount="27.5", payments=[one]),
            "seen": [],
        },
        {
            "invoice": invoice(
                status="expired", value="25", paidAmount="25", payments=[two], deadline=100
            ),
            "seen": [],
        },
        {
            "invoice": invoice(
                status="expired", value="25", paidAmount="10", payments=[one], deadline=100
            ),
            "seen": [],
        },
        {
            "invoice": invoice(status="partialPaid", value="25", paidAmount="10", payments=[one]),
            "seen": [one, two],
        },
        {
            "invoice": invoice(status="paid", value="25", paidAmount="25", payments=[one]),
            "seen": [one],
        },
        {"invoice": invoice(status="paid", value="0", paidAmount="3", payments=[one]), "seen": []},
    ]
    answers = node([{"fn": "outcome", **case} for case in cases])
    assert answers[0] == {"kind": "overpaid", "excess": "2.5", "value": "25"}
    assert answers[1] == {"kind": "late", "paid": "25"}  # paid in full, after the deadline
    assert answers[2] == {"kind": "expiredPartial", "paid": "10", "value": "25", "missing": "15"}
    assert answers[3] == {
        "kind": "reversed",
        "amount": "0.0075",
        "txHash": "0xb2",
        "token": "0x0",
        "chainId": "31337",
    }
    assert answers[4] is None and answers[5] is None  # exact, and a tip jar is never overpaid
