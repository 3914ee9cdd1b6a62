"""``paycore serve``: a small standalone host app under a real server.

The core imports no web framework, so each framework is imported only when chosen. The
host apps themselves are the adapters' ``create_app``; this module only picks a server:
uvicorn for Litestar, and for Flask werkzeug's threaded server, the one WSGI server every
Flask install has. For production Flask, run ``paycore_flask.create_app`` under a WSGI
server such as gunicorn instead (see README).

Everything this process writes goes through ``paycore.ops.redaction``: the banner names the
storage URL without its password, and every log line (the server's own included, which is
why uvicorn is told to leave logging alone) is redacted before it reaches stderr.
"""

from __future__ import annotations

import logging
import signal
import sys
from typing import Any

from ..config import Settings
from ..ops.redaction import configure_logging, redact, remember_secrets

FRAMEWORKS = ("flask", "litestar")


def create_app(framework: str, settings: Settings, prefix: str) -> Any:
    """The standalone host app of ``framework``; it owns a gateway built from ``settings``."""
    if framework == "flask":
        from paycore_flask import create_app as flask_app

        return flask_app(settings, prefix=prefix)
    if framework == "litestar":
        from paycore_litestar import create_app as litestar_app

        return litestar_app(settings, prefix=prefix)
    raise ValueError(f"unknown framework {framework!r}; choose one of {', '.join(FRAMEWORKS)}")


def serve(framework: str, settings: Settings, *, host: str, port: int, prefix: str) -> None:
    """Serve until interrupted (Ctrl-C or SIGTERM), then close the gateway's storage."""
    remember_secrets(settings.secret_values())
    # Quiet by default (warnings and errors), as the servers below are.
    configure_logging("WARNING")
    app = create_app(framework, settings, prefix)
    shown = prefix.strip("/")
    print(
        f"paycore: {framework} on http://{host}:{port}/{shown + '/' if shown else ''} "
        f"(storage {redact(settings.database_url)})",
        file=sys.stderr,
        flush=True,
    )
    if framework == "litestar":
        import uvicorn

        # The plugin closes the gateway in the app's lifespan shutdown. After a graceful
        # stop uvicorn re-raises the signal it caught, so SIGTERM ends the process as such.
        # log_config=None: uvicorn's loggers propagate to the redacting root handler
        # instead of getting handlers of their own.
        uvicorn.run(
            app, host=host, port=port, log_level="warning", access_log=False, log_config=None
        )
        return

    from werkzeug.serving import run_simple

    from paycore_flask import state

    # werkzeug only stops on Ctrl-C; make SIGTERM (a supervisor's stop) as clean.
    signal.signal(signal.SIGTERM, _stop)
    # No access log under either server: quiet by default, like uvicorn above.
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    try:
        run_simple(host, port, app, threaded=True, use_reloader=False, use_debugger=False)
    finally:
        state(app).gateway.close()


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)
