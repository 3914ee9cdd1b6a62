"""``paycore serve``: the standalone host app under gunicorn, with ``--workers`` processes.

The core imports no web framework, so each framework is imported only when chosen. The
host apps themselves are the adapters' ``create_app``; this module runs them under one
process manager, gunicorn's arbiter, for both frameworks (docs/decisions.md §Production
server), each worker one uvicorn event loop (``asgi_worker.PaycoreWorker``). Litestar is
ASGI itself; Flask runs behind ``paycore_flask.asgi.AsgiFront``: the loop reads every request and
holds every idle connection and WebSocket, and only complete requests take one of
``--threads`` threads, so idle sockets and slowloris clients cannot use up the threads. The
arbiter restarts a worker that dies, and stops them all gracefully on SIGTERM.

Every worker builds its own app, and with it its own gateway and database engine, after the
fork (``preload_app`` stays off): a connection pool is never shared between processes.
Each gateway is closed in the app's lifespan shutdown.

Past ``--worker-connections`` open connections a worker answers HTTP requests 503 (upgrades
are bounded by the socket caps, ``paycore.realtime.limits``), and the server raises its soft
open-file limit to the hard one at start, so that the limit, not the descriptors, is what
runs out.

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
#: Threads per Flask worker: requests one process runs at once (idle connections and
#: WebSockets hold none).
DEFAULT_THREADS = 8
#: Connections (idle ones and WebSockets included) past which a worker answers HTTP 503.
#: Above ``Settings.event_streams_max`` (10,000) by 2,000, so a worker holding its full
#: share of checkout pages still answers their polls and the merchant's requests: at
#: exactly 10,000 the server's own 503 came first and the stream cap was never reached.
DEFAULT_CONNECTIONS = 12_000


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
    connections: int = DEFAULT_CONNECTIONS,
) -> None:
    """Serve until SIGTERM or Ctrl-C, every worker's gateway closed on the way out."""
    if framework not in FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}; choose one of {', '.join(FRAMEWORKS)}")
    if workers < 1 or threads < 1 or connections < 1:
        raise ValueError("workers, threads and connections must be at least 1")
    remember_secrets(settings.secret_values())
    # Quiet by default (warnings and errors); the workers inherit this root handler.
    configure_logging("WARNING")
    raise_open_file_limit(connections + 256)
    server = _gunicorn(
        framework,
        settings,
        host=host,
        port=port,
        prefix=prefix,
        workers=workers,
        threads=threads,
        connections=connections,
    )
    shown = prefix.strip("/")
    print(
        f"paycore: {framework} on http://{_authority(host, port)}/{shown + '/' if shown else ''} "
        f"({workers} worker{'s' if workers > 1 else ''}, storage {redact(settings.database_url)})",
        file=sys.stderr,
        flush=True,
    )
    server.run()


def raise_open_file_limit(wanted: int) -> int:
    """Raise this process's soft open-file limit towards the hard one (the workers inherit
    it); the soft limit now. Says so when it stays below ``wanted``: each connection is a
    descriptor, and a worker out of them refuses connections before its own cap does."""
    try:
        import resource
    except ImportError:  # not on this platform: nothing to raise
        return wanted
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = max(soft, wanted) if hard == resource.RLIM_INFINITY else max(soft, hard)
    if target != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (OSError, ValueError):
            pass
    if soft < wanted:
        logging.getLogger("paycore.serve").warning(
            "open-file limit %d is below the %d connections a worker may hold: raise it "
            "(ulimit -n) or lower --worker-connections",
            soft,
            wanted,
        )
    return int(soft)


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
    connections: int = DEFAULT_CONNECTIONS,
) -> Any:
    return gunicorn_server(
        framework,
        lambda: create_app(framework, settings, prefix),
        host=host,
        port=port,
        workers=workers,
        threads=threads,
        connections=connections,
    )


def gunicorn_server(
    framework: str,
    build: Callable[[], Any],
    *,
    host: str,
    port: int,
    workers: int = 1,
    threads: int = DEFAULT_THREADS,
    connections: int = DEFAULT_CONNECTIONS,
    worker_exit: Callable[[Any, Any], None] | None = None,
) -> Any:
    """The gunicorn application ``paycore serve`` runs (call ``.run()``): ``build`` builds
    the app in each worker, after the fork (a Flask app is put behind ``AsgiFront``). Public
    so that a benchmark can put its ceiling (a bare app of the same framework) under the
    very same server and settings."""
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
    options["worker_class"] = "paycore.runtime.asgi_worker.PaycoreWorker"
    options["worker_connections"] = connections
    if worker_exit is not None:
        options["worker_exit"] = worker_exit

    class _Server(BaseApplication):  # type: ignore[misc]
        def load_config(self) -> None:
            for key, value in options.items():
                if key in self.cfg.settings:  # settings newer than the installed gunicorn
                    self.cfg.set(key, value)

        def load(self) -> Any:
            # Runs in the worker, after the fork: the app (and any gateway) is its own.
            app = build()
            if framework == "flask":
                from paycore_flask.asgi import AsgiFront

                return AsgiFront.for_app(app, threads=threads)
            return app

    return _Server()
