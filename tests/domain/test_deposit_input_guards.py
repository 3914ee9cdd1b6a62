"""``checked_deposit``: a deposit a host hands to ``Gateway.record_deposit`` is refused at the
edge when a field is out of its range, with the bounds exactly where they are documented."""

from __future__ import annotations

from decimal import Decimal

import attrs
import pytest

from paycore.domain.invoices import checked_deposit
from paycore.domain.records import Deposit
from paycore.domain.tokens import NATIVE
from paycore.errors import InvalidInput

DEPOSIT = Deposit(
    1, "0x" + "ab" * 32, -1, NATIVE, "0x" + "11" * 20,
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", Decimal("1"), 1_000,
)  # fmt: skip


def test_a_log_index_of_minus_one_is_a_native_transfer_and_below_it_is_refused() -> None:
    assert checked_deposit(DEPOSIT).log_index == -1
    with pytest.raises(InvalidInput, match="log_index out of range"):
        checked_deposit(attrs.evolve(DEPOSIT, log_index=-2))


@pytest.mark.parametrize("field", ["tx_hash", "from_"])
def test_hashes_and_senders_up_to_128_characters(field: str) -> None:
    assert checked_deposit(attrs.evolve(DEPOSIT, **{field: "a" * 128}))
    with pytest.raises(InvalidInput, match=f"deposit.{field}: must be a non-empty string"):
        checked_deposit(attrs.evolve(DEPOSIT, **{field: "a" * 129}))


def test_an_amount_from_zero_to_below_ten_to_the_thirty() -> None:
    """A zero transfer is a transfer (a token may emit one; it counts for nothing); the
    ceiling is the one every amount has (``MAX_AMOUNT``), exclusive, as documented."""
    assert checked_deposit(attrs.evolve(DEPOSIT, amount=Decimal(0))).amount == 0
    below = Decimal("9" * 30 + "." + "9" * 18)
    assert checked_deposit(attrs.evolve(DEPOSIT, amount=below)).amount == below
    for amount in (Decimal("-1e-18"), Decimal(10**30)):
        with pytest.raises(InvalidInput, match="at least 0 and below 10\\^30"):
            checked_deposit(attrs.evolve(DEPOSIT, amount=amount))
