"""Addresses are taken exactly as written, by the one parser in ``paycore.domain.tokens``.

A pasted address often carries a newline, a tab, a no-break space or a zero-width space.
The base58 decoder paycore uses strips trailing whitespace on its own, so before this was
checked a Tron address with a trailing newline was accepted and stored with it. Every
spelling outside the documented ones (EVM: ``0x`` + 40 hex; Tron: ``T...`` base58, ``41``
+ 40 hex, ``0x`` + 40 hex) is refused here with a reason that names the character.
"""

from __future__ import annotations

import re

import pytest

from paycore.chains.tron import address as tron_address
from paycore.config import ChainConfig
from paycore.domain.tokens import (
    NATIVE,
    TokenId,
    address_text,
    normalize_address,
    normalize_owner,
    normalize_token_address,
    normalize_tron,
    to_checksum,
    tron_from_hex,
    tron_to_hex,
)
from paycore.errors import InvalidInput

TRON = 728126428
TRON_B58 = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
TRON_HEX = "41a614f803b6fd780986a42c78ec9c7f77e6ded13c"
EVM = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"

#: Whitespace and invisible characters a copy-paste brings: space, newline, tab, carriage
#: return, no-break space, line separator, paragraph separator, zero-width space, BOM,
#: ideographic space, narrow no-break space, vertical tab, NUL.
STRAY = [
    " ",
    "\n",
    "\t",
    "\r",
    "\u00a0",
    "\u2028",
    "\u2029",
    "\u200b",
    "\ufeff",
    "\u3000",
    "\u202f",
    "\x0b",
    "\x00",
]
ADDRESSES = [(1, EVM), (TRON, TRON_B58), (TRON, TRON_HEX), (TRON, "0x" + TRON_HEX[2:])]


def _code(ch: str) -> str:
    return f"U+{ord(ch):04X}"


@pytest.mark.parametrize("ch", STRAY, ids=_code)
@pytest.mark.parametrize(("chain_id", "raw"), ADDRESSES)
def test_surrounding_whitespace_is_refused_and_named(chain_id: int, raw: str, ch: str) -> None:
    normalize_address(chain_id, raw)  # the address itself is fine
    for text, where in ((raw + ch, "trailing"), (ch + raw, "leading"), (ch + raw + ch, "leading")):
        with pytest.raises(InvalidInput) as caught:
            normalize_address(chain_id, text, "address")
        assert caught.value.field == "address"
        assert caught.value.reason.startswith(f"has {where} "), caught.value.reason
        assert caught.value.reason.endswith(_code(ch))
        with pytest.raises(InvalidInput, match=re.escape(_code(ch))):
            normalize_owner(text)
    middle = raw[:10] + ch + raw[10:]
    with pytest.raises(InvalidInput, match="embedded .*" + re.escape(_code(ch))):
        normalize_address(chain_id, middle)


@pytest.mark.parametrize("ch", STRAY, ids=_code)
def test_every_parser_refuses_it(ch: str) -> None:
    """The lower-level functions too: a path that calls them directly is as strict."""
    for parse, raw in (
        (to_checksum, EVM),
        (tron_to_hex, TRON_B58),
        (tron_from_hex, TRON_HEX),
        (normalize_tron, TRON_B58),
        (tron_address.to_evm, TRON_B58),
        (tron_address.to_tron, TRON_HEX),
        (tron_address.to_tron, TRON_B58),
    ):
        with pytest.raises(InvalidInput, match=re.escape(_code(ch))):
            parse(raw + ch)
    with pytest.raises(InvalidInput, match=re.escape(_code(ch))):
        TokenId.parse(f"{TRON}:{TRON_B58}{ch}")
    with pytest.raises(InvalidInput, match=re.escape(_code(ch))):
        TokenId.parse(f"{ch}1:{NATIVE}")
    with pytest.raises(InvalidInput, match=re.escape(_code(ch))):
        normalize_token_address(1, NATIVE + ch)


def test_the_trailing_newline_the_decoder_would_strip() -> None:
    """The case that reached storage: base58's own decoder accepts it."""
    import base58

    assert base58.b58decode_check(TRON_B58 + "\n") == bytes.fromhex(TRON_HEX)
    with pytest.raises(InvalidInput) as caught:
        normalize_owner(TRON_B58 + "\n", "ownerAddress")
    assert caught.value.text == "invalid request: ownerAddress: has trailing whitespace U+000A"


@pytest.mark.parametrize(
    ("chain_id", "raw"),
    [
        (1, EVM[2:]),  # bare digits
        (1, "0X" + EVM[2:]),  # upper-case prefix
        (1, EVM + "0"),
        (1, NATIVE[2:]),  # the native coin without its prefix
        (TRON, TRON_HEX[2:]),  # bare 20 bytes
        (TRON, "0x" + TRON_HEX),  # 0x before the 41 byte
        (TRON, "0X" + TRON_HEX[2:]),
        (TRON, TRON_B58[:-1]),
        (TRON, TRON_B58 + "1"),
        (TRON, "1" + TRON_B58),  # a leading zero digit decodes to a 0x00 byte
        (TRON, "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj60"),  # 0 is not a base58 digit
        (TRON, "\u0422R7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"),  # Cyrillic Te
    ],
)
def test_undocumented_spellings_are_refused(chain_id: int, raw: str) -> None:
    with pytest.raises(InvalidInput):
        normalize_token_address(chain_id, raw)
    with pytest.raises(InvalidInput):
        normalize_owner(raw)


def test_non_ascii_is_named() -> None:
    with pytest.raises(InvalidInput, match=re.escape("non-ASCII character U+0422")):
        normalize_owner("\u0422R7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")
    with pytest.raises(InvalidInput, match=re.escape("U+0661")):
        TokenId.parse(f"\u0661:{NATIVE}")  # an Arabic-Indic one is a digit to str.isdigit


def test_documented_spellings_still_work() -> None:
    assert to_checksum(EVM.lower()) == EVM == to_checksum(EVM.upper().replace("0X", "0x"))
    assert normalize_tron(TRON_HEX) == normalize_tron(TRON_HEX.upper()) == TRON_B58
    assert normalize_tron("0x" + TRON_HEX[2:]) == TRON_B58
    assert normalize_owner(TRON_HEX) == TRON_B58
    assert normalize_token_address(TRON, "T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb") == NATIVE
    assert normalize_token_address(TRON, "41" + "00" * 20) == NATIVE
    assert normalize_token_address(TRON, NATIVE) == NATIVE
    assert address_text("abc", "x") == "abc"
    for bad in (None, 5, b"0x00", ""):
        with pytest.raises(InvalidInput):
            address_text(bad, "x")


def test_config_addresses_are_strict_too() -> None:
    """An operator's pasted factory fails at startup with the reason; in a comma-separated
    ``tokens`` string, spaces after a comma are list layout."""
    with pytest.raises(InvalidInput, match=re.escape("factory: has trailing whitespace U+000A")):
        ChainConfig(1, "eth", factory=EVM + "\n")
    with pytest.raises(InvalidInput, match=re.escape("tokens: has trailing whitespace U+00A0")):
        ChainConfig(TRON, "tron", tokens=[TRON_B58 + "\u00a0"])
    listed = ChainConfig(TRON, "tron", tokens=f"{TRON_B58}, {TRON_HEX}")
    assert listed.tokens == (TRON_B58, TRON_B58)
    with pytest.raises(InvalidInput, match=re.escape("U+0009")):
        ChainConfig(TRON, "tron", tokens=f"{TRON_B58},\t{TRON_HEX}")
