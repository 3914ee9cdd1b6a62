"""``paycore watcher``: the EVM chains' deposit watchers in a process of their own, without
the worker's other loops (docs/operations.md §Commands).

It builds a ``Gateway``, so it lives here with the other commands; the watchers themselves
are ``paycore.chains.evm.watcher``, which never imports the command line.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Sequence

from ..chains.evm import plugin as evm_plugin
from ..chains.evm.watcher import run_watchers, watchers
from ..config import Settings
from ..gateway import Gateway
from ..ops.redaction import configure_logging

log = logging.getLogger("paycore.watcher")

__all__ = ["watch"]


def watch(settings: Settings, log_level: str = "INFO", plugins: Sequence[object] = ()) -> int:
    """Watch every configured EVM chain (``PAYCORE_CHAINS``) until SIGTERM or SIGINT."""
    configure_logging(log_level.upper())
    gateway = Gateway(settings, plugins=[*plugins, *_plugin_unless_installed()])
    if not watchers(gateway):
        log.warning("no EVM chain has both rpc_url and factory configured: nothing to watch")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        run_watchers(gateway, stop)
    finally:
        gateway.close()
    return 0


def _plugin_unless_installed() -> list[object]:
    """The EVM plugin, unless its entry point already brings it (registering it twice fails)."""
    from importlib.metadata import entry_points

    installed = any(ep.value == evm_plugin.__name__ for ep in entry_points(group="paycore"))
    return [] if installed else [evm_plugin]
