"""The built-in token registry and ``ChainConfig.tokens`` entries that carry symbol and
decimals: what a payer is shown comes from here, so every row and every refusal is pinned."""

from __future__ import annotations

import re

import attrs
import pytest

from paycore import NATIVE, ChainConfig, Settings
from paycore.config import _default_chains
from paycore.domain.registry import (
    TokenMeta,
    by_symbol,
    describe,
    registry_chains,
    registry_symbol,
    registry_token,
    registry_tokens,
    token_entry,
)
from paycore.domain.tokens import ChainKind, chain_kind, normalize_token_address
from paycore.errors import InvalidInput

USDT_ETH = "0xdAC17F958D2ee523a2206206994597C13D831ec7"
USDC_ETH = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"
USDC_BASE = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
USDT_TRON = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
TRON, NILE = 728126428, 3448148188
MINE = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"


def test_every_default_chain_with_a_market_has_usdt_or_usdc() -> None:
    """The registry covers the default chains, not dev chains or Shasta; each row is in
    its canonical form, with sane decimals, once per chain."""
    listed = set(registry_chains())
    expected = set(_default_chains()) - {1337, 31337, 2494104990}
    assert listed == expected
    for chain_id in listed:
        tokens = registry_tokens(chain_id)
        symbols = {t.symbol for t in tokens}
        assert symbols & {"USDT", "USDC", "USD₮0"}, chain_id
        assert len({t.address for t in tokens}) == len(tokens)
        for token in tokens:
            assert normalize_token_address(chain_id, token.address) == token.address
            assert token.address != NATIVE
            assert token.decimals in (6, 18)
            if chain_kind(chain_id) is ChainKind.TRON:
                assert token.address.startswith("T")


def test_the_well_known_rows() -> None:
    assert registry_token(1, USDT_ETH) == TokenMeta(USDT_ETH, "USDT", 6)
    assert registry_token(8453, USDC_BASE) == TokenMeta(USDC_BASE, "USDC", 6)
    assert registry_token(TRON, USDT_TRON) == TokenMeta(USDT_TRON, "USDT", 6)
    # BSC's stablecoins have 18 decimals: the thousand-fold trap of guessing 6.
    assert registry_symbol(56, "USDT") is not None
    assert registry_symbol(56, "USDT").decimals == 18  # type: ignore[union-attr]
    assert registry_token(1, USDT_ETH.lower()) is None  # lookups take normalised addresses
    assert registry_token(10, USDT_ETH) is None  # the same address elsewhere is not it
    assert registry_tokens(31337) == ()


def test_symbols_match_any_case_and_listed_aliases() -> None:
    assert (
        registry_symbol(1, "usdc") == registry_symbol(1, "USDC") == TokenMeta(USDC_ETH, "USDC", 6)
    )
    arbitrum_usdt = registry_symbol(42161, "USDT")
    assert arbitrum_usdt is not None and arbitrum_usdt.symbol == "USD₮0"
    assert registry_symbol(42161, "usdt0") == arbitrum_usdt
    assert registry_symbol(1, "USDT0") is None
    assert registry_symbol(1, "BTC") is None


def test_token_entries_in_chain_config() -> None:
    config = ChainConfig(
        1,
        "ethereum",
        tokens=(
            "USDT",
            USDC_ETH.lower(),
            {"address": MINE.lower(), "symbol": "SHOP", "decimals": 2},
            TokenMeta(USDT_ETH, "USDT", 6),
        ),
    )
    assert config.tokens == (USDT_ETH, USDC_ETH, MINE, USDT_ETH)
    assert config.token_info == {
        USDT_ETH: TokenMeta(USDT_ETH, "USDT", 6),
        USDC_ETH: TokenMeta(USDC_ETH, "USDC", 6),
        MINE: TokenMeta(MINE, "SHOP", 2),
    }
    # A plain address the registry does not list is read from the chain later.
    plain = ChainConfig(1, "ethereum", tokens=(MINE,))
    assert plain.tokens == (MINE,) and plain.token_info == {}
    # An entry's own symbol and decimals win over the registry's.
    own = ChainConfig(
        1, "ethereum", tokens=({"address": USDT_ETH, "symbol": "Tether", "decimals": 6},)
    )
    assert own.token_info[USDT_ETH].symbol == "Tether"
    # evolve re-derives it; the old plain lists keep working, from code and from env text.
    assert attrs.evolve(config, name="x").token_info == config.token_info
    listed = ChainConfig(1, "ethereum", tokens=f"USDC, {USDT_ETH}")
    assert listed.tokens == (USDC_ETH, USDT_ETH) and set(listed.token_info) == {USDC_ETH, USDT_ETH}
    tron = ChainConfig(NILE, "nile", tokens=("USDT",))
    assert tron.token_info[tron.tokens[0]].symbol == "USDT"
    assert hash(config) == hash(attrs.evolve(config))


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("BTC", "no token 'BTC' in the registry for chain 1"),
        ("USDT ", "trailing whitespace"),
        ({"symbol": "X", "decimals": 6}, "needs its address"),
        ({"address": MINE, "symbol": "X"}, "symbol and decimals together"),
        ({"address": MINE, "decimals": 6}, "symbol and decimals together"),
        ({"address": MINE, "symbol": "X", "decimals": 6, "name": "x"}, "no field 'name'"),
        ({"address": MINE, "symbol": "X", "decimals": 78}, "from 0 to 77"),
        ({"address": MINE, "symbol": "X", "decimals": -1}, "from 0 to 77"),
        ({"address": MINE, "symbol": "X", "decimals": True}, "from 0 to 77"),
        ({"address": MINE, "symbol": "X", "decimals": 6.0}, "from 0 to 77"),
        ({"address": MINE, "symbol": "", "decimals": 6}, "non-empty"),
        ({"address": MINE, "symbol": "A" * 17, "decimals": 6}, "at most 16"),
        ({"address": MINE, "symbol": "US DT", "decimals": 6}, "no spaces"),
        ({"address": MINE, "symbol": 5, "decimals": 6}, "non-empty string"),
        ({"address": USDT_TRON, "symbol": "X", "decimals": 6}, "not a 20-byte hex address"),
        (5, "must be a string"),
    ],
)
def test_bad_token_entries_fail_at_startup(entry: object, reason: str) -> None:
    with pytest.raises(InvalidInput, match=re.escape(reason)):
        ChainConfig(1, "ethereum", tokens=(entry,))  # type: ignore[arg-type]


def test_decimals_may_come_as_env_text() -> None:
    assert token_entry(1, {"address": MINE, "symbol": "X", "decimals": "6"}, "t")[1] == TokenMeta(
        MINE, "X", 6
    )


def test_describe_and_by_symbol_follow_native_config_then_registry() -> None:
    chains = _default_chains()
    chains[31337] = ChainConfig(
        31337, "anvil", tokens=({"address": MINE, "symbol": "USDT", "decimals": 6},)
    )
    chains[137] = ChainConfig(137, "polygon", native_symbol="POL")
    settings = Settings(database_url="memory://", chains=chains)
    assert describe(settings, 1, NATIVE) == TokenMeta(NATIVE, "ETH", 18)
    assert describe(settings, TRON, NATIVE) == TokenMeta(NATIVE, "TRX", 6)
    assert describe(settings, 31337, MINE) == TokenMeta(MINE, "USDT", 6)
    assert describe(settings, 1, USDT_ETH) == TokenMeta(USDT_ETH, "USDT", 6)
    assert describe(settings, 1, MINE) is None
    assert describe(settings, 999, NATIVE) is None  # not a configured chain
    assert by_symbol(settings, 1, "eth") == TokenMeta(NATIVE, "ETH", 18)
    assert by_symbol(settings, 56, "BNB") == TokenMeta(NATIVE, "BNB", 18)
    assert by_symbol(settings, 137, "POL") == TokenMeta(NATIVE, "POL", 18)
    assert by_symbol(settings, TRON, "trx") == TokenMeta(NATIVE, "TRX", 6)
    assert by_symbol(settings, 31337, "usdt") == TokenMeta(MINE, "USDT", 6)
    assert by_symbol(settings, 8453, "USDC") == TokenMeta(USDC_BASE, "USDC", 6)
    assert by_symbol(settings, 8453, "USDT") is None
    assert by_symbol(settings, 31337, "ETH") == TokenMeta(NATIVE, "ETH", 18)


def test_token_info_may_be_given_directly_and_describes_without_watching() -> None:
    config = ChainConfig(
        1, "ethereum", token_info={MINE.lower(): {"symbol": "SHOP", "decimals": 2}}
    )
    assert config.token_info == {MINE: TokenMeta(MINE, "SHOP", 2)} and config.tokens == ()
    with pytest.raises(InvalidInput, match="token_info: each value needs symbol and decimals"):
        ChainConfig(1, "ethereum", token_info={MINE: {}})
    with pytest.raises(InvalidInput, match="token_info: each value needs symbol and decimals"):
        ChainConfig(1, "ethereum", token_info={MINE: "SHOP"})
    with pytest.raises(InvalidInput, match="symbol and decimals together"):
        ChainConfig(1, "ethereum", token_info={MINE: {"symbol": "SHOP"}})


def test_the_registry_table_in_the_docs_is_the_registry() -> None:
    """docs/deploying.md lists every row, and only those, so an operator reads what paycore
    will show; its Python example runs as written."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "deploying.md").read_text("utf-8")
    rows = re.findall(r"^\| (\d+) \([\w-]+\) \| (\S+) \| `(\w+)` \| (\d+) \|$", text, re.M)
    documented = [(int(c), s, a, int(d)) for c, s, a, d in rows]
    listed = [
        (c, t.symbol, t.address, t.decimals) for c in registry_chains() for t in registry_tokens(c)
    ]
    assert documented == listed
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        exec(compile(block, "docs/deploying.md", "exec"), {})
