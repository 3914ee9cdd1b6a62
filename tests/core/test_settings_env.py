"""Numbers in ``PAYCORE_*`` variables: a typo is one line naming the variable, never a
traceback from deep inside a command (``paycore worker`` reads these at start-up)."""

from __future__ import annotations

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
