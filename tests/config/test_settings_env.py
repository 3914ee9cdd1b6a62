"""Numbers in ``PAYCORE_*`` variables: a typo is one line naming the variable, never a
traceback from deep inside a command (``paycore worker`` reads these at start-up)."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import attrs
import pytest

from paycore.config import Settings
from paycore.errors import InvalidInput


def test_seconds_and_schedules_parse_as_numbers() -> None:
    settings = Settings.from_env(
        {"PAYCORE_WEBHOOK_TIMEOUT": "2.5", "PAYCORE_WEBHOOK_RETRY_SCHEDULE": "1, 5,30"}
    )
    assert settings.webhook_timeout == 2.5
    assert settings.webhook_retry_schedule == (1.0, 5.0, 30.0)


@pytest.mark.parametrize(
    ("name", "value"),
    [("WEBHOOK_TIMEOUT", "abc"), ("WORKER_POLL_INTERVAL", "1s"), ("WEBHOOK_RETRY_SCHEDULE", "1,x")],
)
def test_a_number_that_does_not_parse_names_its_variable(name: str, value: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        Settings.from_env({f"PAYCORE_{name}": value})
    assert f"PAYCORE_{name}" in caught.value.text
    assert "\n" not in caught.value.text


def chains(value: object) -> dict[int, object]:
    return dict(Settings.from_env({"PAYCORE_CHAINS": json.dumps(value)}).chains)


def test_paycore_chains_is_laid_over_the_defaults() -> None:
    """A node for anvil leaves Ethereum, Base and Tron where they were; an entry changes
    only the keys it gives and may repeat its own chain id."""
    defaults = Settings().chains
    found = chains({"31337": {"chain_id": 31337, "rpc_url": "http://127.0.0.1:8545"}})
    assert set(found) == set(defaults)
    assert found[31337] == attrs.evolve(defaults[31337], rpc_url="http://127.0.0.1:8545")
    assert found[1] == defaults[1]


def test_paycore_chains_adds_drops_and_can_start_from_nothing() -> None:
    found = chains({"4242": {"name": "mine", "confirmations": 3}, "1": None})
    assert found[4242].name == "mine" and found[4242].confirmations == 3
    assert 1 not in found and 8453 in found
    assert set(chains({"defaults": False, "4242": {"name": "mine"}})) == {4242}


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"5": {"chain_id": 6, "name": "x"}}, "the entry under 5 says chain_id 6"),
        ({"five": {"name": "x"}}, "'five' is not a chain id"),
        ({"5": "x"}, "must be an object or null"),
        ({"defaults": "no"}, '"defaults" must be true or false'),
        ([5], "JSON object keyed by chain id"),
        ({"5": {"name": "x", "rpc": "http://x"}}, "rpc"),
    ],
)
def test_a_paycore_chains_mistake_is_one_line_naming_it(value: object, says: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        chains(value)
    assert "PAYCORE_CHAINS" in caught.value.text and says in caught.value.text
    assert "\n" not in caught.value.text


def test_the_documented_paycore_chains_example_parses() -> None:
    """docs/chains.md shows every key of an entry; the block must stay a working value."""
    text = (Path(__file__).parents[2] / "docs" / "chains.md").read_text()
    block = text.split("<!-- paycore-chains-example -->", 1)[1].split("```json\n", 1)[1]
    found = chains(json.loads(block.split("```", 1)[0]))
    assert found[8453].rpc_urls == ("https://base-backup.example.org",)
    assert found[8453].token_info[found[8453].tokens[1]].symbol == "DAI"
    assert found[728126428].rate_limit == 10 and found[728126428].name == "tron-mainnet"
    assert found[31337].faucet_key is not None and 56 not in found
    assert found[8453].detect_unconfirmed is True


@pytest.mark.parametrize("tolerance", ["-0.01", "1", "NaN", "Infinity", "sNaN"])
def test_an_underpayment_tolerance_outside_zero_to_one_is_refused(tolerance: str) -> None:
    with pytest.raises(
        InvalidInput, match="underpayment_tolerance: must be at least 0 and below 1"
    ):
        Settings(underpayment_tolerance=Decimal(tolerance))


def test_an_underpayment_tolerance_in_range_is_kept_as_a_decimal() -> None:
    assert Settings(underpayment_tolerance="0.02").underpayment_tolerance == Decimal("0.02")  # type: ignore[arg-type]
    assert Settings().underpayment_tolerance == 0
