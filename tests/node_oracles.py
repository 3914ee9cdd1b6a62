"""Running the Node.js oracles of ``tests/node`` (ethers, TronWeb) from the Python tests.

Each oracle reads ``{"tasks": [...]}`` on stdin and writes one JSON array of results. A test
that needs one is skipped when Node or the npm package is missing, unless
``PAYCORE_REQUIRE_NODE=1`` (CI), where that is a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def missing(package: str | None) -> str | None:
    """Why the oracle cannot run here, or None (``package`` None: the script imports only
    the repository's own modules)."""
    if shutil.which("node") is None:
        return "node is not installed"
    if package is not None and not (ROOT / "node_modules" / package / "package.json").is_file():
        return f"node_modules/{package} is missing (run npm ci)"
    return None


def run_oracle(
    script: str, package: str | None, tasks: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The results of ``tests/node/<script>`` for ``tasks``, one each, in order."""
    why = missing(package)
    if why is not None:
        if os.environ.get("PAYCORE_REQUIRE_NODE") == "1":
            pytest.fail(f"PAYCORE_REQUIRE_NODE=1 but {why}")
        pytest.skip(why)
    done = subprocess.run(
        ["node", str(ROOT / "tests" / "node" / script)],
        input=json.dumps({"tasks": tasks}),
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"node oracle {script} failed: {done.stderr[-2000:]}")
    results: list[dict[str, Any]] = json.loads(done.stdout)
    assert len(results) == len(tasks)
    return results
