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
    assert coin == {"from": payer, "to": DEPOSIT, "value": hex(125 * 10**14)}  # 0.0125 ETH
    assert token["to"] == USDT_ADDRESS and token["value"] == "0x0"
    assert token["data"] == data
    assert data == "0xa9059cbb" + DEPOSIT[2:].lower().rjust(64, "0") + f"{25_000_000:064x}"
