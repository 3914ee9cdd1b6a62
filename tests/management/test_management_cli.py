"""``paycore email enable|disable OWNER``: the operator's switch, from the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from paycore.management.records import EmailSetting
from paycore.runtime.cli import main
from paycore_storage import SqlStorage

OWNER = "0x1111111111111111111111111111111111111111"


def test_enable_and_disable_an_owners_notices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'paycore.sqlite3'}"
    store = SqlStorage(url)
    with store.transaction() as tx:
        tx.put_email(EmailSetting(OWNER, 1, "shop@example.test"))
        tx.put_email(EmailSetting(OWNER, 137, "polygon@example.test"))

    assert main(["email", "enable", OWNER.lower(), "--chain-id", "137", "--database-url", url]) == 0
    assert capsys.readouterr().out == (f"{OWNER} chain 137: polygon@example.test -- notices on\n")
    with store.transaction() as tx:
        assert [s.enabled for s in tx.emails_of(OWNER)] == [False, True]

    assert main(["email", "enable", OWNER, "--database-url", url]) == 0
    assert main(["email", "disable", OWNER, "--chain-id", "1", "--database-url", url]) == 0
    with store.transaction() as tx:
        assert [s.enabled for s in tx.emails_of(OWNER)] == [False, True]
    store.close()


def test_an_owner_without_an_address_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'paycore.sqlite3'}"
    assert main(["email", "enable", OWNER, "--database-url", url]) == 2
    assert capsys.readouterr().err == f"paycore: {OWNER} has set no e-mail address\n"
    assert main(["email", "enable", "0xnope", "--database-url", url]) == 2
    assert "ownerAddress" not in capsys.readouterr().err
