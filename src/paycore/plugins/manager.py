"""The plugin manager factory: built-ins, then installed entry points, then the caller's own.

Built in are ``builtins`` (memory storage, static prices, the WebSocket hub) and ``email``
(deposit and withdrawal e-mails). Operators block a plugin by name with
``PAYCORE_BLOCKED_PLUGINS=name,other`` (see ``Settings.blocked_plugins``); pluggy then
refuses to register it wherever it comes from.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pluggy

from ..config import Settings
from ..errors import PaycoreError
from ..notify import email as email_notices
from . import builtins, hookspecs
from .hookspecs import PROJECT

if TYPE_CHECKING:
    from ..storage import Storage


class PluginError(PaycoreError):
    """A plugin paycore cannot use: a ``@hookimpl`` with a name that is no hook, or with
    arguments its hook does not have. One line that names the plugin and the hook."""


def plugin_manager(
    settings: Settings, extra: Iterable[object] = (), *, entry_points: bool = True
) -> pluggy.PluginManager:
    """The plugins in their fixed order: built-ins, installed entry points, the caller's.
    Every ``@hookimpl`` must name a hook of ``hookspecs`` with that hook's arguments; a
    misspelt one is a :class:`PluginError` here, not a hook that silently never runs."""
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    for name in settings.blocked_plugins:
        pm.set_blocked(name)
    try:
        if not pm.is_blocked("builtins"):
            pm.register(builtins, name="builtins")
        if not pm.is_blocked("email"):
            # Deposit and withdrawal e-mails; inert until Settings.smtp_host is set.
            pm.register(email_notices, name="email")
        if entry_points:
            pm.load_setuptools_entrypoints(PROJECT)
        for plugin in extra:
            pm.register(plugin)
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(_explained(pm, exc)) from None
    return pm


def _name(pm: pluggy.PluginManager, plugin: object) -> str:
    """A plugin as its author knows it: its entry point's or module's name, else its class."""
    given = pm.get_name(plugin)
    if given and not given.isdigit():  # pluggy names an unnamed object by its id()
        return given
    found = getattr(plugin, "__name__", None)
    return found if isinstance(found, str) else type(plugin).__qualname__


def _explained(pm: pluggy.PluginManager, exc: pluggy.PluginValidationError) -> str:
    plugin = _name(pm, exc.plugin)
    text = " ".join(str(exc).split())
    unknown = re.search(r"unknown hook '(\w+)'", text)
    if unknown is not None:
        return (
            f"plugin {plugin}: {unknown.group(1)} is not a paycore hook "
            f"(the hooks are {', '.join(hookspecs.HOOKS)})"
        )
    wrong = re.search(r"hook '(\w+)'.*?Argument\(s\) (\{.*?\}) are declared in the hookimpl", text)
    if wrong is not None:
        hook = wrong.group(1)
        known = ", ".join(getattr(pm.hook, hook).spec.argnames)
        return (
            f"plugin {plugin}: {hook} takes no argument(s) {wrong.group(2)} "
            f"(its arguments are {known})"
        )
    return f"plugin {plugin}: {text}"


def collect(hook: Any, settings: Settings) -> list[Any]:
    """Call a ``register``-style hook and return what the plugins registered, in order."""
    found: list[Any] = []
    hook(settings=settings, register=found.append)
    return found


def find_storage(settings: Settings, extra: Iterable[object] = ()) -> Storage:
    """The storage the ``paycore_storage`` hook offers for ``settings.database_url``, as a
    gateway would find it; a URL no plugin answers for is a ``PaycoreError`` saying so."""
    found: Storage | None = plugin_manager(settings, extra).hook.paycore_storage(settings=settings)
    if found is None:
        raise PaycoreError(f"no storage plugin handles {settings.database_url!r}")
    return found


def host_plugins(pm: pluggy.PluginManager) -> list[object]:
    """The plugins a host registered itself on ``pm`` (``Gateway(plugins=...)``): neither
    built in nor brought by an entry point, so a new manager takes them again without
    registering anything twice."""
    from_entry_points = {id(plugin) for plugin, _dist in pm.list_plugin_distinfo()}
    return [
        plugin
        for name, plugin in pm.list_name_plugin()
        if plugin is not None
        and name not in ("builtins", "email")
        and id(plugin) not in from_entry_points
    ]
