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

from importlib.util import find_spec

# Without its extra, name the one to install (the imports below wait for this check)
# rather than fail deep in an import chain.
_MISSING = [name for name in ("litestar", "uvicorn", "websockets") if find_spec(name) is None]
if _MISSING:
    raise ModuleNotFoundError(
        f"paycore_litestar needs {', '.join(_MISSING)}: pip install 'paycore[litestar]'",
        name=_MISSING[0],
    )

from .app import create_app  # noqa: E402
from .handler import ROUTE_OPT, build_router  # noqa: E402
from .plugin import DEPENDENCY_KEY, STATE_KEY, PayCoreConfig, PayCorePlugin, checkout_url  # noqa: E402

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
