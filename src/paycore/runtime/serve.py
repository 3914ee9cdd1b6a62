"""``paycore serve``: the standalone host app under gunicorn, with ``--workers`` processes.

The core imports no web framework, so each framework is imported only when chosen. The
host apps themselves are the adapters' ``create_app``; this module runs them under one
process manager, gunicorn's arbiter, for both frameworks (docs/decisions.md §Production
server): Flask in ``gthread`` workers (threads, which flask-sock's WebSockets need), Litestar
in uvicorn's worker class (``uvicorn-worker``), one event loop per process. The arbiter
restarts a worker that dies, and stops them all gracefully on SIGTERM.

Every worker builds its own app, and with it its own gateway and database engine, after the
fork (``preload_app`` stays off): a connection pool is never shared between processes.
Flask's gateway is closed in the worker's exit hook, Litestar's in the app's lifespan.

Everything these processes write goes through ``paycore.ops.redaction``: the banner names the
storage URL without its password, paycore's own log lines reach the redacting root handler
(installed before the fork, so the workers inherit it), and gunicorn's and uvicorn's lines go
through gunicorn's handlers, whose formatters ``_RedactingLogger`` wraps.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

from ..config import Settings
from ..errors import PaycoreError
from ..ops.redaction import RedactedFormatter, configure_logging, redact, remember_secrets

FRAMEWORKS = ("flask", "litestar")
#: Threads per Flask worker: concurrent requests (and open WebSockets) one process serves.
DEFAULT_THREADS = 8


def create_app(framework: str, settings: Settings, prefix: str) -> Any:
    """The standalone host app of ``framework``; it owns a gateway built from ``settings``."""
    if framework == "flask":
        from paycore_flask import create_app as flask_app

        return flask_app(settings, prefix=prefix)
    if framework == "litestar":
        from paycore_litestar import create_app as litestar_app

        return litestar_app(settings, prefix=prefix)
    raise ValueError(f"unknown framework {framework!r}; choose one of {', '.join(FRAMEWORKS)}")


def serve(
    framework: str,
    settings: Settings,
    *,
    host: str,
    port: int,
    prefix: str,
    workers: int = 1,
    threads: int = DEFAULT_THREADS,
) -> None:
    """Serve until SIGTERM or Ctrl-C, every worker's gateway closed on the way out."""
    if framework not in FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}; choose one of {', '.join(FRAMEWORKS)}")
    if workers < 1 or threads < 1:
        raise ValueError("workers and threads must be at least 1")
    remember_secrets(settings.secret_values())
    # Quiet by default (warnings and errors); the workers inherit this root handler.
    configure_logging("WARNING")
    server = _gunicorn(
        framework, settings, host=host, port=port, prefix=prefix, workers=workers, threads=threads
    )
    shown = prefix.strip("/")
    print(
        f"paycore: {framework} on http://{_authority(host, port)}/{shown + '/' if shown else ''} "
        f"({workers} worker{'s' if workers > 1 else ''}, storage {redact(settings.database_url)})",
        file=sys.stderr,
        flush=True,
    )
    server.run()


def _authority(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _gunicorn(
    framework: str,
    settings: Settings,
    *,
    host: str,
    port: int,
    prefix: str,
    workers: int,
    threads: int,
) -> Any:
    return gunicorn_server(
        framework,
        lambda: create_app(framework, settings, prefix),
        host=host,
        port=port,
        workers=workers,
        threads=threads,
        worker_exit=_close_flask_gateway if framework == "flask" else None,
    )


def gunicorn_server(
    framework: str,
    build: Callable[[], Any],
    *,
    host: str,
    port: int,
    workers: int = 1,
    threads: int = DEFAULT_THREADS,
    worker_exit: Callable[[Any, Any], None] | None = None,
) -> Any:
    """The gunicorn application ``paycore serve`` runs (call ``.run()``): ``build`` builds
    the app in each worker, after the fork. Public so that a benchmark can put its ceiling
    (a bare app of the same framework) under the very same server and settings."""
    try:
        from gunicorn.app.base import BaseApplication
        from gunicorn.glogging import Logger
    except ImportError:
        raise PaycoreError("paycore serve needs gunicorn: pip install 'paycore[server]'") from None

    class _RedactingLogger(Logger):  # type: ignore[misc]
        """gunicorn's logger (uvicorn's worker logs through it too), every line redacted."""

        def setup(self, cfg: Any) -> None:
            super().setup(cfg)
            for log in (self.error_log, self.access_log):
                for handler in log.handlers:
                    handler.setFormatter(RedactedFormatter(handler.formatter))

    options: dict[str, Any] = {
        "bind": [_authority(host, port)],
        "workers": workers,
        "preload_app": False,  # each worker builds its own app, gateway and engine
        "logger_class": _RedactingLogger,
        "loglevel": "warning",
        "accesslog": None,
        "errorlog": "-",
        "proc_name": f"paycore-{framework}",
        # gunicorn >= 25 opens a control socket in ~/.gunicorn by default, shared by every
        # server of the user: two paycore servers would fight over it.
        "control_socket_disable": True,
    }
    if framework == "flask":
        options.update(worker_class="gthread", threads=threads)
    else:
        options["worker_class"] = "uvicorn_worker.UvicornWorker"
    if worker_exit is not None:
        options["worker_exit"] = worker_exit

    class _Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            for key, value in options.items():
                if key in self.cfg.settings:  # settings newer than the installed gunicorn
                    self.cfg.set(key, value)

        def load(self) -> Any:
            # Runs in the worker, after the fork: the app (and any gateway) is its own.
            return build()

    return _Server()


def _close_flask_gateway(_arbiter: object, worker: Any) -> None:
    """gunicorn's ``worker_exit`` hook, in the worker process as it stops."""
    app = getattr(worker, "wsgi", None)
    if app is None:  # the worker died before its app was built
        return
    from paycore_flask import state

    state(app).gateway.close()
    logging.getLogger("paycore.serve").debug("worker %s closed its gateway", worker.pid)
