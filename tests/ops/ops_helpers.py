"""Real parts for the operations tests: a private PostgreSQL server that a test may stop and
start, ``paycore serve`` / ``paycore worker`` processes whose whole output is kept, and a
webhook receiver.

The PostgreSQL server is private because these tests stop it: stopping the shared one would
break every other test running at the time. It is a fresh ``initdb`` cluster in a temporary
directory, on a free loopback port, with password authentication (so a URL's password is a
real secret the tests can look for), started and stopped with ``pg_ctl``. Run as root, the
server runs as the ``postgres`` user, since PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from paycore_storage.engine import database_url


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_until(check: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def postgres_bindir() -> Path | None:
    """The newest PostgreSQL server binaries: Debian's versioned directories, else PATH."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: (
            int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0
        ),
    )
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


class PrivatePostgres:
    """One throw-away PostgreSQL cluster; :meth:`close` stops it and deletes its files."""

    def __init__(self, bindir: Path, password: str) -> None:
        self.bindir = bindir
        self.password = password
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="paycore-pg-"))
        self.data = self.root / "data"
        self.logfile = self.root / "server.log"
        self._as: dict[str, Any] = {}
        if os.geteuid() == 0:  # PostgreSQL will not run as root
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        pwfile = self.root / "pwfile"
        pwfile.write_text(password + "\n")
        if self._as:
            os.chown(pwfile, self._as["user"], self._as["group"])
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--pwfile",
            str(pwfile),
            "--auth-host=scram-sha-256",
            "--auth-local=trust",
            "--no-sync",
            "-E",
            "UTF8",
        )
        pwfile.unlink()
        self.running = False

    def _run(self, tool: str, *args: str) -> None:
        result = subprocess.run(
            [str(self.bindir / tool), *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=self.root,
            **self._as,
        )
        if result.returncode != 0:
            raise RuntimeError(f"{tool} failed ({result.returncode}): {result.stderr[-2000:]}")

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 "
            # fsync off is safe here: a stopped server's writes are in the kernel already.
            # synchronous_commit stays on, or "-m immediate" would lose acknowledged commits.
            "-c fsync=off -c max_connections=200"
        )
        self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.logfile), "-o", options, "-w", "start"
        )
        self.running = True

    def stop(self, mode: str = "immediate") -> None:
        """``immediate``: the server goes away at once, as in a crash or a failover."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")
        self.running = False

    def url(self, database: str = "postgres", *, password: str | None = None) -> str:
        secret = self.password if password is None else password
        return f"postgresql://postgres:{secret}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """A new, empty database; its URL (with the password)."""
        from sqlalchemy import create_engine, text

        engine = create_engine(database_url(self.url()), isolation_level="AUTOCOMMIT")
        try:
            with engine.connect() as connection:
                connection.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            engine.dispose()
        return self.url(name)

    def close(self) -> None:
        try:
            if self.running or (self.data / "postmaster.pid").exists():
                self.stop("immediate")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


class Process:
    """A ``paycore`` command run as its own process, stdout and stderr kept in one file."""

    def __init__(self, args: list[str], env: Mapping[str, str], log: Path) -> None:
        self.log = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "paycore.runtime.cli", *args],
                env=dict(env),
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)
        return self.proc.returncode


def serve(
    framework: str, env: Mapping[str, str], log: Path, *, workers: int = 1
) -> tuple[Process, str]:
    """``paycore serve`` on a free port, up and answering; (process, base URL of the API)."""
    port = free_port()
    args = ["serve", "--framework", framework, "--port", str(port), "--workers", str(workers)]
    process = Process(args, env, log)
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if process.proc.poll() is not None:
            raise AssertionError(f"paycore serve exited:\n{process.output()}")
        try:
            return httpx.get(base + "/health", timeout=1).status_code == 200
        except httpx.TransportError:
            return False

    wait_until(up, what=f"paycore serve --framework {framework}")
    return process, base + "/paycore"


class Receiver:
    """A webhook endpoint on 127.0.0.1 answering ``status``; keeps every JSON body, with
    its arrival time (``time.time()``) under ``"_at"``."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.bodies: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with receiver.lock:
                    receiver.bodies.append({**json.loads(body), "_at": time.time()})
                self.send_response(receiver.status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def received(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.bodies)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
