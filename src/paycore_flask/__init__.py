"""Flask extension for paycore: ``PayCore(app)`` mounts the whole HTTP interface (docs/interface.md)
under one prefix: one URL rule per endpoint (``paycore.create_invoice``, ...), each handing the
request to ``paycore.api.handle_streamed``, and a catch-all rule for paycore's 404/405 answers.
``current_gateway()`` is the current app's gateway, for host views.

    from flask import Flask
    from paycore import Settings
    from paycore_flask import PayCore

    app = Flask(__name__)
    paycore = PayCore(app, settings=Settings(database_url="sqlite:///shop.sqlite3"))
"""

from __future__ import annotations

from importlib.util import find_spec

# Without its extra, name the one to install (the imports below wait for this check)
# rather than fail deep in an import chain.
_MISSING = [
    name
    for name in ("flask", "flask_sock", "werkzeug", "blinker", "simple_websocket")
    if find_spec(name) is None
]
if _MISSING:
    raise ModuleNotFoundError(
        f"paycore_flask needs {', '.join(_MISSING)}: pip install 'paycore[flask]'", name=_MISSING[0]
    )

from .app import create_app  # noqa: E402
from .asgi import create_asgi_app  # noqa: E402
from .extension import PayCore, PayCoreState, settings_from_config, state  # noqa: E402
from .view import checkout_url, current_gateway  # noqa: E402

__all__ = [
    "PayCore",
    "PayCoreState",
    "checkout_url",
    "create_app",
    "create_asgi_app",
    "current_gateway",
    "settings_from_config",
    "state",
]
