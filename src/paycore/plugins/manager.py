"""The plugin manager factory: built-ins, then installed entry points, then the caller's own.

Built in are ``builtins`` (memory storage, static prices, the WebSocket hub) and ``email``
(deposit and withdrawal e-mails). Operators block a plugin by name with
``PAYCORE_BLOCKED_PLUGINS=name,other`` (see ``Settings.blocked_plugins``); pluggy then
refuses to register it wherever it comes from.
"""

from __future__ import annotations

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


def plugin_manager(
    settings: Settings, extra: Iterable[object] = (), *, entry_points: bool = True
) -> pluggy.PluginManager:
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    for name in settings.blocked_plugins:
        pm.set_blocked(name)
    if not pm.is_blocked("builtins"):
        pm.register(builtins, name="builtins")
    if not pm.is_blocked("email"):
        # Deposit and withdrawal e-mails; inert until Settings.smtp_host is set.
        pm.register(email_notices, name="email")
    if entry_points:
        pm.load_setuptools_entrypoints(PROJECT)
    for plugin in extra:
        pm.register(plugin)
    return pm


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
