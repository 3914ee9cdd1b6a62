"""``paycore serve``'s connection cap against the checkout-stream cap: a worker holding every
stream its process may hold must still have connections left for the polls and requests
beside them, or the server's own 503 comes before the stream cap's (which tells a page to
poll meanwhile)."""

from __future__ import annotations

from click.testing import CliRunner

from paycore import Settings
from paycore.runtime.cli import cli
from paycore.runtime.serve import DEFAULT_CONNECTIONS


def test_the_default_connection_cap_leaves_room_beside_a_full_set_of_streams() -> None:
    streams = Settings().event_streams_max
    assert DEFAULT_CONNECTIONS - streams >= 1_000, (DEFAULT_CONNECTIONS, streams)


def test_the_help_states_the_default_cap() -> None:
    shown = CliRunner().invoke(cli, ["serve", "--help"])
    assert shown.exit_code == 0
    assert f"default {DEFAULT_CONNECTIONS}" in " ".join(shown.output.split())
