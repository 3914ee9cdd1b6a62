"""The public API explains itself: ``help()`` and the API reference (docs/api.md) show a
docstring for every public method of the objects a caller or a plugin author works with.

A method without a docstring is worse than it looks: ``pydoc`` then shows the comment above
it instead, so a ``# -- section --`` banner turns up as the method's documentation.
"""

from __future__ import annotations

import inspect
import pydoc

import pytest

import paycore
from paycore.storage import Storage, StorageTx
from paycore_flask import PayCore
from paycore_litestar import PayCoreConfig, PayCorePlugin

#: The protocols ``StorageTx`` is composed of (``paycore.storage.protocols``): it defines no
#: method of its own, each of theirs is documented where it is declared.
STORAGE_PROTOCOLS = [
    base
    for base in StorageTx.__mro__[1:]
    if base.__module__.startswith("paycore.") and base.__name__ != "Protocol"
]
DOCUMENTED_CLASSES = [
    paycore.Gateway,
    paycore.Settings,
    paycore.ChainConfig,
    paycore.Invoice,
    paycore.Payment,
    paycore.Status,
    paycore.Deposit,
    Storage,
    StorageTx,
    *STORAGE_PROTOCOLS,
    PayCore,
    PayCorePlugin,
    PayCoreConfig,
]
#: Classes each of whose public methods and properties must carry its own docstring.
FULLY_DOCUMENTED = [
    paycore.Gateway,
    Storage,
    *STORAGE_PROTOCOLS,
    paycore.Invoice,
    paycore.Settings,
]


def _public_members(cls: type) -> list[tuple[str, object]]:
    """Methods and properties defined on ``cls`` itself (not inherited), by name."""
    members = []
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, (classmethod, staticmethod)):
            value = value.__func__
        if inspect.isfunction(value) or isinstance(value, property):
            members.append((name, value))
    return members


@pytest.mark.parametrize("cls", DOCUMENTED_CLASSES, ids=lambda c: c.__qualname__)
def test_public_class_has_its_own_docstring(cls: type) -> None:
    doc = cls.__dict__.get("__doc__")
    assert doc and doc.strip(), f"{cls.__module__}.{cls.__qualname__} has no docstring"


@pytest.mark.parametrize("cls", FULLY_DOCUMENTED, ids=lambda c: c.__qualname__)
def test_every_public_method_has_a_docstring(cls: type) -> None:
    members = _public_members(cls)
    assert members, f"{cls.__qualname__} lists no public methods: the test looks wrong"
    missing = [name for name, member in members if not (member.__doc__ or "").strip()]
    assert missing == [], f"{cls.__qualname__} methods without a docstring: {missing}"


def test_storage_tx_documents_the_lock_of_get_invoice() -> None:
    doc = StorageTx.get_invoice.__doc__ or ""
    assert "for_update" in doc and "lock" in doc


@pytest.mark.parametrize("cls", [paycore.Gateway, StorageTx, Storage], ids=lambda c: c.__name__)
def test_help_shows_no_section_banner_as_a_method_doc(cls: type) -> None:
    text = pydoc.render_doc(cls, renderer=pydoc.plaintext)
    banners = [line.strip() for line in text.splitlines() if "# --" in line]
    assert banners == [], f"help({cls.__name__}) shows section banners as docs: {banners}"
