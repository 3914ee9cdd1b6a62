"""Loading plugins (``paycore.plugins.manager``): the order they are taken in, a misspelt
hook or a wrong argument refused at start with one line that names the plugin and the hook
(tox's ``check_pending``), blocking a built-in, and a URL no storage plugin answers for.
docs/plugins.md has one tested section per hook (tests/docs/test_plugins_doc.py)."""

from __future__ import annotations

import types
from typing import Any

import pytest

from paycore import Settings
from paycore.errors import PaycoreError
from paycore.plugins import hookspecs
from paycore.plugins.hookspecs import hookimpl
from paycore.plugins.manager import PluginError, collect, find_storage, plugin_manager


def plugin(name: str, **hooks: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    for hook, function in hooks.items():
        setattr(module, hook, hookimpl(function))
    return module


def test_a_misspelt_hook_is_refused_naming_the_plugin_and_the_hooks() -> None:
    def paycore_chain_backends(settings: Settings, register: Any) -> None: ...

    def paycore_chain_backend(settings: Settings, register: Any) -> None: ...

    good = plugin("good_chain", paycore_chain_backends=paycore_chain_backends)
    assert good in plugin_manager(Settings(), [good], entry_points=False).get_plugins()
    with pytest.raises(PluginError) as refused:
        plugin_manager(
            Settings(),
            [plugin("typo_chain", paycore_chain_backend=paycore_chain_backend)],
            entry_points=False,
        )
    text = str(refused.value)
    assert text.startswith("plugin typo_chain: paycore_chain_backend is not a paycore hook")
    assert all(hook in text for hook in hookspecs.HOOKS) and "\n" not in text


def test_an_argument_the_hook_does_not_have_is_refused() -> None:
    def paycore_chain_backends(settings: Settings, register: Any, chain: int) -> None: ...

    with pytest.raises(PluginError) as refused:
        plugin_manager(
            Settings(),
            [plugin("extra_arg", paycore_chain_backends=paycore_chain_backends)],
            entry_points=False,
        )
    assert str(refused.value).startswith(
        "plugin extra_arg: paycore_chain_backends takes no argument(s)"
    )
    assert "chain" in str(refused.value)


def test_register_hooks_collect_in_plugin_order() -> None:
    def first(settings: Settings, register: Any) -> None:
        register("a")

    def second(settings: Settings, register: Any) -> None:
        register("b")
        register("c")

    one = plugin("one", paycore_chain_backends=first)
    two = plugin("two", paycore_chain_backends=second)
    pm = plugin_manager(Settings(), [one, two], entry_points=False)
    found = collect(pm.hook.paycore_chain_backends, Settings())
    # pluggy calls the latest registered first; both plugins' registrations arrive in full.
    assert sorted(found) == ["a", "b", "c"] and found.index("b") < found.index("c")


def test_a_blocked_builtin_is_not_loaded() -> None:
    pm = plugin_manager(Settings(blocked_plugins=("email",)), entry_points=False)
    assert pm.get_plugin("email") is None and pm.get_plugin("builtins") is not None


def test_a_database_url_no_plugin_answers_for_is_named() -> None:
    with pytest.raises(PaycoreError, match="no storage plugin handles 'nosuch://x'"):
        find_storage(Settings(database_url="nosuch://x", blocked_plugins=("builtins",)))
