"""Token aliases: what the public DepiPay client sends (``tron:<base58>``, ``tron:TRX``,
lowercase EVM addresses) and symbols in place of addresses (``8453:USDC``) are accepted on
POST /invoice and stored as canonical ``{chainId}:{address}`` ids."""

from __future__ import annotations

import json
import re

import pytest

from paycore import NATIVE, ChainConfig, Gateway, Settings
from paycore.api import Request, handle
from paycore.config import _default_chains
from paycore.domain.aliases import resolve_token, token_text
from paycore.domain.fields import parse_token
from paycore.errors import InvalidInput

TRON, NILE, SHASTA = 728126428, 3448148188, 2494104990
USDT_TRON = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
USDT_TRON_HEX = "41a614f803b6fd780986a42c78ec9c7f77e6ded13c"
USDT_NILE = "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf"
USDC_BASE = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
USDT_ETH = "0xdAC17F958D2ee523a2206206994597C13D831ec7"
TRON_DEPOSIT = "TJRabPrwbZy45sbavfcjinPJC18kjpRTv8"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
DEPOSIT = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
SHOP_TOKEN = "0x1111111111111111111111111111111111111111"


def settings(**chains: ChainConfig) -> Settings:
    table = _default_chains()
    for config in chains.values():
        table[config.chain_id] = config
    return Settings(database_url="memory://", chains=table, auth_mode="soft")


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        (f"1:{USDT_ETH.lower()}", f"1:{USDT_ETH}"),
        (f"{TRON}:{USDT_TRON_HEX}", f"{TRON}:{USDT_TRON}"),
        (f"tron:{USDT_TRON}", f"tron:{USDT_TRON}"),
        (f"tron:{USDT_TRON_HEX}", f"tron:{USDT_TRON}"),
        ("TRON:TRX", "tron:TRX"),
        ("tron:T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb", f"tron:{NATIVE}"),
        ("8453:USDC", "8453:USDC"),
        ("1:eth", "1:eth"),
        ("42161:USDC.e", "42161:USDC.e"),
    ],
)
def test_the_wire_keeps_aliases_and_canonicalises_addresses(raw: str, text: str) -> None:
    assert token_text(raw, "t") == parse_token(raw, "t") == text


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("tron:", "must not be empty"),
        ("tron:0x12", "not a valid Tron hex address"),
        ("tron:TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6u", "not a valid Tron base58 address"),
        ("eth:USDC", "bad chain id"),
        (":USDC", "bad chain id"),
        ("1:US DC", "embedded whitespace"),
        ("1:ÜSDT", "non-ASCII"),
        ("1:1USDT", "not a 20-byte hex address"),
        ("1:" + "A" * 17, "not a 20-byte hex address"),
        ("8453", "must look like {chainId}:{tokenAddress}"),
        ("tron:TRX:1", "must look like {chainId}:{tokenAddress}"),
        (5, "must look like {chainId}:{tokenAddress}"),
    ],
)
def test_bad_spellings_are_refused_with_the_reason(raw: object, reason: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(reason)):
        token_text(raw, "t")


def test_symbols_resolve_to_the_native_coin_configured_tokens_and_the_registry() -> None:
    shop = ChainConfig(
        31337, "anvil", tokens=({"address": SHOP_TOKEN, "symbol": "USDT", "decimals": 6},)
    )
    s = settings(anvil=shop)
    assert str(resolve_token(s, "8453:USDC", "t")) == f"8453:{USDC_BASE}"
    assert str(resolve_token(s, "8453:eth", "t")) == f"8453:{NATIVE}"
    assert str(resolve_token(s, "56:BNB", "t")) == f"56:{NATIVE}"
    assert str(resolve_token(s, f"{TRON}:TRX", "t")) == f"{TRON}:{NATIVE}"
    assert str(resolve_token(s, "31337:usdt", "t")) == f"31337:{SHOP_TOKEN}"
    assert str(resolve_token(s, f"1:{USDT_ETH.lower()}", "t")) == f"1:{USDT_ETH}"
    with pytest.raises(InvalidInput, match=re.escape("t: no token 'USDT' known on chain 8453")):
        resolve_token(s, "8453:USDT", "t")
    with pytest.raises(InvalidInput, match="no token 'ETH' known on chain 999"):
        resolve_token(s, "999:ETH", "t")


def test_tron_prefix_names_the_invoice_chain_or_the_one_tron_chain_with_a_node() -> None:
    s = settings()
    assert str(resolve_token(s, "tron:TRX", "t", chain_id=NILE)) == f"{NILE}:{NATIVE}"
    assert str(resolve_token(s, "tron:USDT", "t", chain_id=NILE)) == f"{NILE}:{USDT_NILE}"
    assert str(resolve_token(s, f"tron:{USDT_TRON}", "t", chain_id=TRON)) == f"{TRON}:{USDT_TRON}"
    with pytest.raises(
        InvalidInput, match="tron: names the Tron chain configured with a node, and none is"
    ):
        resolve_token(s, "tron:TRX", "t", chain_id=1)
    one = settings(nile=ChainConfig(NILE, "nile", 19, "http://127.0.0.1:9", "TRX", 6))
    assert str(resolve_token(one, "tron:TRX", "t")) == f"{NILE}:{NATIVE}"
    assert str(resolve_token(one, "tron:USDT", "t", chain_id=1)) == f"{NILE}:{USDT_NILE}"
    two = settings(
        nile=ChainConfig(NILE, "nile", 19, "http://127.0.0.1:9", "TRX", 6),
        shasta=ChainConfig(SHASTA, "shasta", 19, "http://127.0.0.1:9", "TRX", 6),
    )
    with pytest.raises(InvalidInput, match="and several are"):
        resolve_token(two, "tron:TRX", "t")
    with pytest.raises(InvalidInput, match="no token 'USDT' known on chain 2494104990"):
        resolve_token(two, "tron:USDT", "t", chain_id=SHASTA)


def _post_invoice(gateway: Gateway, body: dict[str, object]) -> tuple[int, object]:
    raw = json.dumps(body).encode()
    response = handle(gateway, Request("POST", "/invoice", body=raw, raw_uri="/invoice"))
    text = response.body.decode()
    return response.status, json.loads(text) if response.status < 300 else text


def test_depipay_tron_invoice_is_stored_canonical() -> None:
    gateway = Gateway(settings())
    status, invoice = _post_invoice(
        gateway,
        {
            "value": "25",
            "chainId": TRON,
            "description": "tee",
            "acceptedTokens": [f"tron:{USDT_TRON}", "tron:TRX", f"tron:{USDT_TRON_HEX}"],
            "token": "tron:TRX",
            "address": TRON_DEPOSIT,
            "owner": OWNER,
        },
    )
    assert status == 201, invoice
    assert isinstance(invoice, dict)
    assert invoice["acceptedTokens"] == [f"{TRON}:{USDT_TRON}", f"{TRON}:{NATIVE}"]
    assert invoice["token"] == f"{TRON}:{NATIVE}"
    stored = gateway.get_invoice(invoice["guid"])
    assert stored.accepted_tokens == (f"{TRON}:{USDT_TRON}", f"{TRON}:{NATIVE}")


def test_evm_symbols_and_lowercase_addresses_on_post_invoice() -> None:
    gateway = Gateway(settings())
    status, invoice = _post_invoice(
        gateway,
        {
            "value": "25",
            "chainId": 8453,
            "description": "tee",
            "acceptedTokens": ["8453:USDC", f"8453:{USDC_BASE.lower()}", "8453:ETH"],
            "address": DEPOSIT.lower(),
            "owner": OWNER,
        },
    )
    assert status == 201, invoice
    assert isinstance(invoice, dict)
    assert invoice["acceptedTokens"] == [f"8453:{USDC_BASE}", f"8453:{NATIVE}"]
    # The reason names the list item.
    status, text = _post_invoice(
        gateway,
        {
            "value": "25",
            "chainId": 8453,
            "description": "tee",
            "acceptedTokens": ["8453:USDC", "8453:DOGE"],
            "address": DEPOSIT,
            "owner": OWNER,
        },
    )
    assert (status, text) == (
        400,
        "invalid request: acceptedTokens[1]: no token 'DOGE' known on chain 8453",
    )
    status, text = _post_invoice(
        gateway,
        {
            "value": "25",
            "chainId": 8453,
            "description": "tee",
            "acceptedTokens": ["tron:TRX"],
            "address": DEPOSIT,
            "owner": OWNER,
        },
    )
    assert status == 400 and "acceptedTokens[0]: tron: names the Tron chain" in str(text)
