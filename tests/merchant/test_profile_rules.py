"""The merchant profile's three fields (``paycore.merchant.profile``): each ends up on the
page a buyer trusts, the logo's origin in its Content-Security-Policy, so each is held to a
narrow form here. The HTTP walk of POST/GET /merchant/profile is in
tests/conformance/test_conf_merchant_profile.py."""

from __future__ import annotations

import pytest

from paycore.errors import InvalidInput
from paycore.merchant.profile import MAX_NAME, MAX_URL, NewProfile, parse_profile

OWNER = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"


def parsed(**fields: str | None) -> tuple[str, str | None, str | None]:
    profile = parse_profile(NewProfile(**{"name": "Shop", **fields}), OWNER, 7)  # type: ignore[arg-type]
    return profile.name, profile.logo_url, profile.support


def test_a_full_profile_is_kept_as_given_with_its_logo_origin() -> None:
    profile = parse_profile(
        NewProfile("  Corner   Shop ", "https://CDN.Example:8443/logo.png", "help@shop.example"),
        OWNER,
        7,
    )
    assert (profile.name, profile.support, profile.updated_at) == (
        "Corner Shop",
        "help@shop.example",
        7,
    )
    assert profile.logo_origin == "https://cdn.example:8443"
    assert profile.to_page() == {
        "name": "Corner Shop",
        "logoUrl": "https://CDN.Example:8443/logo.png",
        "support": "help@shop.example",
    }


def test_blank_optional_fields_are_not_shown() -> None:
    assert parsed(logo_url="  ", support="") == ("Shop", None, None)
    assert parse_profile(NewProfile("Shop"), OWNER, 7).logo_origin is None


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"name": "   "}, "name"),
        ({"name": "x" * (MAX_NAME + 1)}, "name"),
        ({"name": "Shop\x7f"}, "name"),
        ({"logo_url": "http://cdn.example/logo.png"}, "logoUrl"),
        ({"logo_url": "https://*.example/logo.png"}, "logoUrl"),
        ({"logo_url": "https://cdn.example/a;b.png"}, "logoUrl"),
        ({"logo_url": "https://user@cdn.example/logo.png"}, "logoUrl"),
        ({"logo_url": "https://cdn.example:x/logo.png"}, "logoUrl"),
        ({"logo_url": "https://cdn.example:/logo.png"}, "logoUrl"),
        ({"logo_url": "https://" + "a" * MAX_URL}, "logoUrl"),
        ({"support": "javascript:alert(1)"}, "support"),
        ({"support": "not an address@"}, "support"),
        ({"support": "http://help.example"}, "support"),
    ],
)
def test_each_unsafe_field_is_refused_by_name(fields: dict[str, str], field: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        parsed(**fields)
    assert str(refused.value).startswith(f"invalid request: {field}: ")


def test_support_may_be_an_https_page() -> None:
    assert parsed(support="https://shop.example/help")[2] == "https://shop.example/help"
