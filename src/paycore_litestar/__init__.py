"""Litestar plugin for paycore: ``PayCorePlugin`` mounts the HTTP interface (docs/interface.md)
as a Router under one prefix: one named handler per endpoint (``paycore.create_invoice``, ...)
described in Litestar's OpenAPI schema, each handing the request to
``paycore.api.handle_streamed``, and fallbacks for paycore's 404/405 answers. Host handlers
get the gateway as the ``paycore_gateway`` dependency.

    from litestar import Litestar
    from paycore import Settings
    from paycore_litestar import PayCoreConfig, PayCorePlugin

    paycore = PayCorePlugin(PayCoreConfig(settings=Settings(database_url="memory://")))
    app = Litestar(route_handlers=[...], plugins=[paycore])
"""

from __future__ import annotations

from .app import create_app
from .handler import ROUTE_OPT, build_router
from .plugin import DEPENDENCY_KEY, STATE_KEY, PayCoreConfig, PayCorePlugin, checkout_url

__all__ = [
    "DEPENDENCY_KEY",
    "ROUTE_OPT",
    "STATE_KEY",
    "PayCoreConfig",
    "PayCorePlugin",
    "build_router",
    "checkout_url",
    "create_app",
]
