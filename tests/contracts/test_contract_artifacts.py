"""The committed artifacts are exactly what the pinned solc makes of the committed sources.

Deposit addresses hash the forwarder's bytecode, so an artifact that drifted from its source
would hand out addresses nobody can sweep. Recompiles with ``node scripts/compile_contracts.mjs``
into a temporary folder and compares byte for byte. Skipped without node_modules/solc unless
``PAYCORE_REQUIRE_NODE=1`` (CI), where that fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.node

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "compile_contracts.mjs"
COMMITTED = ROOT / "src" / "paycore" / "contracts" / "artifacts"


def _require_solc() -> str:
    node = shutil.which("node")
    if node is not None and (ROOT / "node_modules" / "solc" / "package.json").exists():
        return node
    message = "node or node_modules/solc is missing: run `npm ci`"
    if os.environ.get("PAYCORE_REQUIRE_NODE") == "1":
        pytest.fail(f"PAYCORE_REQUIRE_NODE=1 but {message}")
    pytest.skip(message)


def test_recompiled_artifacts_match_committed(tmp_path: Path) -> None:
    node = _require_solc()
    done = subprocess.run(
        [node, str(SCRIPT), "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    fresh = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.name for p in COMMITTED.iterdir())
    assert fresh == committed
    for name in committed:
        assert (tmp_path / name).read_bytes() == (COMMITTED / name).read_bytes(), (
            f"{name} differs from a fresh compile: run `node scripts/compile_contracts.mjs` "
            "and commit, knowing that a new forwarder bytecode moves every deposit address"
        )
