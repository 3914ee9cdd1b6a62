"""Flask extension for paycore: ``PayCore(app)`` mounts the whole HTTP interface (docs/interface.md)
under one prefix with one catch-all view that hands each request to ``paycore.api.handle``.

    from flask import Flask
    from paycore import Settings
    from paycore_flask import PayCore

    app = Flask(__name__)
    paycore = PayCore(app, settings=Settings(database_url="sqlite:///shop.sqlite3"))
"""

from __future__ import annotations

from .app import create_app
from .extension import PayCore, PayCoreState, settings_from_config, state

__all__ = ["PayCore", "PayCoreState", "create_app", "settings_from_config", "state"]
