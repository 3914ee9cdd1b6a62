"""gunicorn's and uvicorn's own lines under ``paycore serve``: gunicorn sets up its handlers
itself, after paycore configured logging, so its logger class must redact them too."""

from __future__ import annotations

import logging

import pytest

from paycore import Settings
from paycore.runtime.serve import _gunicorn

PASSWORD = "Gunicorn-Pw-93f1c2"


@pytest.mark.parametrize("framework", ["flask", "litestar"])
def test_the_servers_own_lines_are_redacted(
    framework: str, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = Settings(database_url="sqlite:///unused.sqlite3")
    server = _gunicorn(
        framework, settings, host="127.0.0.1", port=1, prefix="/p", workers=2, threads=2
    )
    assert server.cfg.workers == 2 and server.cfg.preload_app is False
    logger = server.cfg.logger_class(server.cfg)
    logger.error("worker boot: cannot reach postgresql://paycore:%s@db:5432/x", PASSWORD)
    # uvicorn's worker class hands its own loggers gunicorn's handlers: the same formatter.
    uvicorn_error = logging.getLogger("test.uvicorn.error")
    uvicorn_error.handlers = logger.error_log.handlers
    uvicorn_error.propagate = False
    try:
        uvicorn_error.error("lifespan failed: redis://:%s@cache:6379/0", PASSWORD)
    finally:
        uvicorn_error.handlers = []
    err = capsys.readouterr().err
    assert PASSWORD not in err
    assert "postgresql://paycore:***@db:5432/x" in err
    assert "redis://:***@cache:6379/0" in err
