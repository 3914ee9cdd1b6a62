"""Litestar plugin for paycore: ``PayCorePlugin`` mounts the HTTP interface (docs/interface.md)
as a Router under one prefix whose catch-all handler hands each request to
``paycore.api.handle``.

    from litestar import Litestar
    from paycore import Settings
    from paycore_litestar import PayCoreConfig, PayCorePlugin

    paycore = PayCorePlugin(PayCoreConfig(settings=Settings(database_url="memory://")))
    app = Litestar(route_handlers=[...], plugins=[paycore])
"""

from __future__ import annotations

from .app import create_app
from .handler import build_router
from .plugin import STATE_KEY, PayCoreConfig, PayCorePlugin

__all__ = ["STATE_KEY", "PayCoreConfig", "PayCorePlugin", "build_router", "create_app"]
