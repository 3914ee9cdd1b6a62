"""The rules a payment link is held to when it is made (``paycore.links.service.Links``),
checked against the service itself with memory storage: the HTTP walks of links live in
tests/conformance/test_conf_merchant_tools.py."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from paycore import Settings
from paycore.domain.fields import Amount
from paycore.errors import InvalidInput, NoAddressDeriver
from paycore.links.requests import NewLink
from paycore.links.service import LinkNotFound, Links
from paycore.storage.memory import MemoryStorage

NOW = 1_700_000_000
OWNER = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
ETH = "1:0x0000000000000000000000000000000000000000"


def links(derives: bool = True, storage: MemoryStorage | None = None) -> Links:
    def no_invoice(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("creating a link makes no invoice")

    return Links(
        storage or MemoryStorage(),
        Settings(),
        lambda: NOW,
        no_invoice,
        lambda _chain: derives,
        lambda: "https://shop.example/paycore/checkout",
    )


def new_link(**changes: Any) -> NewLink:
    fields: dict[str, Any] = {
        "chain_id": 1,
        "description": "Coffee",
        "accepted_tokens": (ETH,),
        "amount": Amount(Decimal("4.50")),
    }
    fields.update(changes)
    return NewLink(**fields)


def test_a_fixed_link_is_stored_and_read_back() -> None:
    service = links()
    made = service.create(OWNER, new_link())
    assert made.amount == Decimal("4.50")
    assert (made.min_amount, made.max_amount) == (None, Decimal("4.50"))
    assert service.get(made.id) == made
    assert service.url(made.id) == f"https://shop.example/paycore/link/{made.id}"


def test_a_range_link_keeps_its_bounds() -> None:
    made = links().create(
        OWNER,
        new_link(amount=None, min_amount=Amount(Decimal(1)), max_amount=Amount(Decimal(20))),
    )
    assert (made.amount, made.min_amount, made.max_amount) == (None, 1, 20)


@pytest.mark.parametrize(
    ("changes", "field", "reason"),
    [
        ({"min_amount": Amount(Decimal(1))}, "amount", "not both"),
        ({"amount": None, "max_amount": Amount(Decimal(5))}, "minAmount", "required"),
        ({"amount": None, "min_amount": Amount(Decimal(5))}, "maxAmount", "required"),
        (
            {"amount": None, "min_amount": Amount(Decimal(0)), "max_amount": Amount(Decimal(5))},
            "minAmount",
            "above 0",
        ),
        (
            {"amount": None, "min_amount": Amount(Decimal(6)), "max_amount": Amount(Decimal(5))},
            "maxAmount",
            "below minAmount",
        ),
        ({"expires_at": NOW}, "expiresAt", "future"),
        ({"max_uses": 0}, "maxUses", "at least 1"),
        ({"description": "x" * 2001}, "description", ""),
    ],
)
def test_each_bad_link_is_refused_naming_its_field(
    changes: dict[str, Any], field: str, reason: str
) -> None:
    storage = MemoryStorage()
    with pytest.raises(InvalidInput) as refused:
        links(storage=storage).create(OWNER, new_link(**changes))
    text = str(refused.value)
    assert f"{field}:" in text and reason in text
    with storage.transaction() as tx:  # nothing half-written
        assert tx.list_payment_links(OWNER) == ([], 0)


def test_a_chain_without_an_address_deriver_makes_no_link() -> None:
    with pytest.raises(NoAddressDeriver) as refused:
        links(derives=False).create(OWNER, new_link())
    assert "chainId" in str(refused.value)


@pytest.mark.parametrize("link_id", ["missing", "x" * 200])
def test_an_unknown_or_overlong_id_is_not_found(link_id: str) -> None:
    with pytest.raises(LinkNotFound):
        links().get(link_id)
