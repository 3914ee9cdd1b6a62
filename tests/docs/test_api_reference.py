"""docs/api.md's reference cannot drift from the code.

The block between the ``api-reference`` markers is written by scripts/api_reference.py from
the objects themselves; this checks the committed copy is what the script writes now, and,
read back from the page with no help from the script, that every public name it lists
exists and every public method of the Gateway, its sub-services, the storage protocols and
the fake chain, and every ``paycore_*`` fixture, is listed.
"""

from __future__ import annotations

import importlib.util
import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

import paycore
from paycore import Gateway, Settings
from paycore.storage import Storage, StorageTx
from paycore.testing import plugin as fixtures
from paycore.testing.chain import FakeChain

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "api_reference", ROOT / "scripts" / "api_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _public(cls: type) -> set[str]:
    """Public methods and properties of ``cls``, found with ``dir`` (not the script's way)."""
    names = set()
    for name in dir(cls):
        if name.startswith("_"):
            continue
        member = inspect.getattr_static(cls, name)
        if isinstance(member, (property, staticmethod, classmethod)) or inspect.isfunction(member):
            names.add(name)
    return names


def _section(title: str) -> str:
    """The text under the heading that starts with ``title``, up to the next heading."""
    start = PAGE.index(f"### {title}")
    end = PAGE.find("\n### ", start + 1)
    return PAGE[start : end if end != -1 else len(PAGE)]


def _listed(text: str, prefix: str = "") -> set[str]:
    """The names of the ``- `name...`` items of ``text`` that start with ``prefix``."""
    return set(re.findall(rf"^- `{re.escape(prefix)}(\w+)", text, flags=re.M))


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    gateway = Gateway(Settings(database_url="memory://"), entry_points=False)
    yield gateway
    gateway.close()


def test_the_committed_reference_is_what_the_script_writes() -> None:
    script = _script()
    assert script.current(PAGE) == script.render(), (
        "docs/api.md's reference is stale: run python scripts/api_reference.py"
    )


def test_every_public_gateway_method_is_listed_and_every_listed_one_exists(
    gateway: Gateway,
) -> None:
    section = _section("Gateway\n")
    listed = _listed(section.split("\nSub-services", 1)[0], "gateway.")
    assert listed == _public(Gateway)


def test_every_sub_service_and_its_methods_are_listed(gateway: Gateway) -> None:
    section = _section("Gateway\n")
    attributes = _listed(section.split("\nSub-services", 1)[1], "gateway.")
    assert {"sessions", "pow", "events", "webhooks", "management", "links"} <= attributes
    for name in attributes:
        service = getattr(gateway, name)  # a listed attribute that is not there fails here
        methods = _listed(PAGE, f"gateway.{name}.")
        assert methods == _public(type(service)), name


def test_every_package_name_is_listed_and_exists() -> None:
    listed = _listed(_section("The package"), "paycore.")
    assert listed == set(paycore.__all__)
    for name in listed:
        getattr(paycore, name)


@pytest.mark.parametrize("protocol", [Storage, StorageTx])
def test_every_storage_protocol_method_is_listed(protocol: type) -> None:
    listed = _listed(_section(f"paycore.storage.{protocol.__name__}\n"))
    assert listed == _public(protocol)


def test_every_fake_chain_method_is_listed() -> None:
    assert _listed(_section("paycore.testing.chain.FakeChain\n")) == _public(FakeChain)


def test_every_fixture_is_listed() -> None:
    defined = {name for name in vars(fixtures) if name.startswith("paycore_")}
    assert len(defined) >= 6
    assert _listed(_section("The pytest fixtures")) == defined


def test_every_settings_field_is_listed() -> None:
    import attrs

    listed = _listed(_section("Settings\n"))
    assert listed == {f.name for f in attrs.fields(Settings)} | _public(Settings)
