"""The pluggy hooks through which paycore finds its I/O: storage, chains, prices, notifiers.

Storage is pick-one (``firstresult``): the first plugin that answers for the configured
database URL wins. The others are collections: each plugin calls ``register`` for every
backend, source or notifier it offers, so one plugin may offer several. ``register`` is typed
by what it takes, so a type checker tells a plugin author who registers the wrong thing.

Plugins are loaded in a fixed order (``paycore.plugins.manager``): the built-ins, then the
installed entry points of the group ``paycore``, then the host's own (``Gateway(plugins=)``);
pluggy calls the last registered first, and the built-ins are ``trylast``, so a host's plugin
is asked before an installed one and both before the built-ins. A function marked
``@hookimpl`` whose name is not one of the hooks below is refused when the gateway starts
(``check_pending``): a misspelt hook fails loudly instead of never being called.

docs/plugins.md has one section per hook, with an example a test runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from ..chains import ChainBackend
    from ..config import Settings
    from ..notify.contract import Notifier
    from ..prices.pricing import PriceSource
    from ..storage import Storage

PROJECT = "paycore"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

#: What ``paycore_chain_backends`` hands its plugins: call it once per backend offered.
RegisterChainBackend = Callable[["ChainBackend"], None]
#: What ``paycore_price_sources`` hands its plugins, in the plugin's preference order.
RegisterPriceSource = Callable[["PriceSource"], None]
#: What ``paycore_notifiers`` hands its plugins.
RegisterNotifier = Callable[["Notifier"], None]


@hookspec(firstresult=True)
def paycore_storage(settings: Settings) -> Storage | None:
    """Return a Storage for ``settings.database_url`` if this plugin handles that URL, else
    ``None`` so the next plugin is asked. Called once per ``Gateway`` (and by ``paycore
    migrate``), before anything else is built; the first answer that is not ``None`` wins."""


@hookspec
def paycore_chain_backends(settings: Settings, register: RegisterChainBackend) -> None:
    """Register chain backends (``paycore.chains.ChainBackend``): what derives deposit
    addresses, builds unsigned transactions and watches a chain. Called once per
    ``Gateway``; for a chain id two backends claim, the first registered serves it."""


@hookspec
def paycore_price_sources(settings: Settings, register: RegisterPriceSource) -> None:
    """Register price sources (``paycore.prices.pricing.PriceSource``), in preference order.
    Called once per ``Gateway``; the worker's refresher asks them, never a web request."""


@hookspec
def paycore_notifiers(settings: Settings, register: RegisterNotifier) -> None:
    """Register notifiers (``paycore.notify.contract.Notifier``), told of every committed
    invoice change after its commit, in registration order. Called once per ``Gateway``."""


#: The hooks' names, for the one-line error that names a misspelt one.
HOOKS: tuple[str, ...] = (
    "paycore_storage",
    "paycore_chain_backends",
    "paycore_price_sources",
    "paycore_notifiers",
)
