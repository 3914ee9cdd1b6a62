"""The ``paycore`` click group: every command answers ``--help`` with a summary, storage is
found through the ``paycore_storage`` hook, and the same group runs as ``python -m
paycore``, ``flask paycore`` and ``litestar paycore`` on the app's own settings."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from flask import Flask
from litestar import Litestar

from paycore import Gateway, Settings
from paycore.plugins.hookspecs import hookimpl
from paycore.runtime.cli import cli, hosted_cli, main
from paycore.runtime.host import CommandSource
from paycore.storage.memory import MemoryStorage
from paycore_flask import PayCore
from paycore_litestar import PayCoreConfig, PayCorePlugin

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

#: Every command and subcommand the group must keep (other code, docs and tests call them).
EXPECTED = {
    "quickstart",
    "migrate",
    "serve",
    "worker",
    "watcher",
    "prune",
    "email",
    "demo",
    "contracts",
    "contracts deploy",
    "chains",
    "chains check",
}


def _commands(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    for name, command in group.commands.items():
        yield prefix + name, command
        if isinstance(command, click.Group):
            yield from _commands(command, prefix + name + " ")


class TinyStorage(MemoryStorage):
    """A storage with a schema to migrate, for URLs no built-in plugin knows."""

    migrated: list[str] = []

    def __init__(self, url: str) -> None:
        super().__init__()
        self.url = url

    def migrate(self) -> None:
        TinyStorage.migrated.append(self.url)


class TinyPlugin:
    """Answers the storage hook for ``tiny://`` only."""

    @hookimpl
    def paycore_storage(self, settings: Settings) -> Any:
        if settings.database_url.startswith("tiny://"):
            return TinyStorage(settings.database_url)
        return None


@pytest.fixture(autouse=True)
def _fresh() -> None:
    TinyStorage.migrated.clear()


def test_the_group_keeps_every_command() -> None:
    assert {name for name, _ in _commands(cli)} == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_command_answers_help_with_a_summary(name: str) -> None:
    found = dict(_commands(cli))[name]
    assert found.get_short_help_str(limit=200).strip()
    result = CliRunner().invoke(cli, [*name.split(), "--help"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: paycore {name} ")
    assert main([*name.split(), "-h"]) == 0


def test_usage_errors_exit_with_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["email", "toggle", "0x1"]) == 2
    assert "'toggle' is not one of 'enable', 'disable'" in capsys.readouterr().err
    assert main(["no-such-command"]) == 2
    assert main(["worker", "--no-such-flag"]) == 2
    assert main([]) == 2  # a command is required, as before


def test_serve_reads_its_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """PAYCORE_WORKERS etc. still fill the flags; a bad value is a usage error (status 2),
    and the in-memory check still refuses several workers before anything starts."""
    monkeypatch.setenv("PAYCORE_WORKERS", "3")
    monkeypatch.setenv("PAYCORE_DATABASE_URL", "memory://")
    result = CliRunner().invoke(cli, ["serve"])
    assert result.exit_code == 2
    assert "an in-memory database lives in one process" in result.output
    monkeypatch.setenv("PAYCORE_WORKERS", "many")
    assert CliRunner().invoke(cli, ["serve"]).exit_code == 2


def test_migrate_finds_storage_through_the_hook() -> None:
    group = hosted_cli(CommandSource(plugins=lambda: [TinyPlugin()]))
    result = CliRunner().invoke(group, ["migrate", "--database-url", "tiny://shop"])
    assert result.exit_code == 0, result.output
    assert result.output == "migrated tiny://shop\n"
    assert TinyStorage.migrated == ["tiny://shop"]


def test_a_store_without_a_schema_has_nothing_to_migrate() -> None:
    result = CliRunner().invoke(cli, ["migrate", "--database-url", "memory://"])
    assert result.exit_code == 0
    assert result.output == "memory:// keeps no schema: nothing to migrate\n"


@pytest.mark.parametrize("command", ["migrate", "prune", "quickstart", "email enable 0x1"])
def test_a_url_no_plugin_handles_is_one_line_and_status_2(command: str) -> None:
    result = CliRunner().invoke(cli, [*command.split(), "--database-url", "nosuch://x"])
    assert result.exit_code == 2
    assert result.output == "paycore: no storage plugin handles 'nosuch://x'\n"
    assert TinyStorage.migrated == []


def test_python_m_paycore(tmp_path: Path) -> None:
    env = {**os.environ, "PAYCORE_DATABASE_URL": "nosuch://from-env"}
    helped = subprocess.run(
        [sys.executable, "-m", "paycore", "--help"], capture_output=True, text=True, check=False
    )
    assert helped.returncode == 0
    assert "migrate" in helped.stdout and "worker" in helped.stdout
    refused = subprocess.run(
        [sys.executable, "-m", "paycore", "migrate"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert refused.returncode == 2
    assert refused.stderr == "paycore: no storage plugin handles 'nosuch://from-env'\n"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), capture_output=True, text=True, cwd=cwd, check=False, timeout=120
    )


def test_flask_paycore_help_on_the_example_shop(tmp_path: Path) -> None:
    app = str(ROOT / "examples" / "flask_shop" / "shop.py")
    top = _run(str(BIN / "flask"), "--app", app, "paycore", "--help", cwd=tmp_path)
    assert top.returncode == 0, top.stderr
    assert "Usage: flask paycore" in top.stdout and "migrate" in top.stdout
    sub = _run(
        str(BIN / "flask"), "--app", app, "paycore", "chains", "check", "--help", cwd=tmp_path
    )
    assert sub.returncode == 0 and "--no-storage" in sub.stdout


def test_litestar_paycore_help_on_the_example_service(tmp_path: Path) -> None:
    service = ROOT / "examples" / "litestar_service"
    args = ["--app-dir", str(service), "--app", "service:create_app"]
    top = _run(str(BIN / "litestar"), *args, "paycore", "--help", cwd=tmp_path)
    assert top.returncode == 0, top.stderr
    assert "Usage: litestar paycore" in top.stdout and "worker" in top.stdout
    sub = _run(str(BIN / "litestar"), *args, "paycore", "migrate", "--help", cwd=tmp_path)
    assert sub.returncode == 0 and "--database-url" in sub.stdout


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {row[0] for row in db.execute("SELECT name FROM sqlite_master")}


def test_flask_paycore_migrate_uses_the_apps_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's PAYCORE_DATABASE_URL config key, not the environment's, is migrated."""
    monkeypatch.setenv("PAYCORE_DATABASE_URL", f"sqlite:///{tmp_path / 'env.sqlite3'}")
    app = Flask(__name__)
    app.config["PAYCORE_DATABASE_URL"] = f"sqlite:///{tmp_path / 'app.sqlite3'}"
    PayCore(app)
    result = app.test_cli_runner().invoke(args=["paycore", "migrate"])
    assert result.exit_code == 0, result.output
    # (the redactor may mask the pytest directory's name: only its ends are compared)
    assert result.output.startswith("migrated sqlite:///")
    assert result.output.endswith("/app.sqlite3\n")
    assert "paycore_invoices" in _tables(tmp_path / "app.sqlite3")
    assert not (tmp_path / "env.sqlite3").exists()


def test_flask_paycore_takes_the_apps_own_plugins() -> None:
    """A storage plugin the host gave its gateway serves ``flask paycore`` too."""
    gateway = Gateway(Settings(database_url="tiny://flask"), plugins=[TinyPlugin()])
    app = Flask(__name__)
    PayCore(app, gateway=gateway)
    result = app.test_cli_runner().invoke(args=["paycore", "migrate"])
    assert result.exit_code == 0, result.output
    assert TinyStorage.migrated == ["tiny://flask"]
    gone = app.test_cli_runner().invoke(args=["paycore", "prune", "--database-url", "nosuch://"])
    assert gone.exit_code == 2
    assert "no storage plugin handles 'nosuch://'" in gone.output


def test_litestar_plugin_adds_the_group_on_cli_init(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'service.sqlite3'}"
    plugin = PayCorePlugin(PayCoreConfig(settings=Settings(database_url=url)))
    app = Litestar([], plugins=[plugin])
    root = click.Group("litestar")
    plugin.on_cli_init(root)
    result = CliRunner().invoke(root, ["paycore", "migrate"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("migrated sqlite:///")
    assert result.output.endswith("/service.sqlite3\n")
    assert "paycore_invoices" in _tables(tmp_path / "service.sqlite3")
    assert isinstance(app, Litestar)


def test_worker_and_watcher_modules_still_run_as_scripts() -> None:
    for module in ("paycore.runtime.worker", "paycore.chains.evm.watcher"):
        done = subprocess.run(
            [sys.executable, "-m", module, "--help"], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stderr
        assert "--database-url" in done.stdout and "--log-level" in done.stdout


def test_version() -> None:
    from paycore import __version__

    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"paycore {__version__}\n"


def test_a_missing_postgresql_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without psycopg (an extra), migrate says what to install in one line, exit 2."""
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now fails
    monkeypatch.setitem(sys.modules, "psycopg2", None)
    url = "postgresql://paycore:hunter22@127.0.0.1:5432/paycore"
    result = CliRunner().invoke(cli, ["migrate", "--database-url", url])
    assert result.exit_code == 2, result.output
    assert result.output == (
        "paycore: PostgreSQL needs its driver, which is not installed: "
        "pip install 'paycore[postgres]'\n"
    )
