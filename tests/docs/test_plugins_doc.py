"""docs/plugins.md runs as written: its Python blocks in order in one namespace, one section
per hook, and its storage plugin, written out as the page's files, passes the storage
contract suite in a pytest run of its own.

The page also promises one section per hook of ``paycore.plugins.hookspecs``: a hook added
without its section fails here.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from paycore.plugins import hookspecs

PAGE = Path(__file__).resolve().parents[2] / "docs" / "plugins.md"
TEXT = PAGE.read_text(encoding="utf-8")
BLOCKS = re.findall(r"```python\n(.*?)```", TEXT, re.S)
FILE = re.compile(r"# ([\w/]+\.py)\n")


def test_every_hook_has_a_section_with_its_signature() -> None:
    sections = re.findall(r"^## `(\w+)`$", TEXT, re.M)
    assert sections == list(hookspecs.HOOKS)
    for hook in hookspecs.HOOKS:
        assert re.search(rf"```text\n{hook}\(settings: Settings", TEXT), hook
    declared = [name for name in vars(hookspecs) if name.startswith("paycore_")]
    assert sorted(declared) == sorted(hookspecs.HOOKS)


def test_the_examples_run_in_order() -> None:
    namespace: dict[str, object] = {"__name__": "plugins_doc"}
    ran = 0
    for block in BLOCKS:
        if FILE.match(block):
            continue
        exec(compile(block, str(PAGE), "exec"), namespace)
        ran += 1
    assert ran == 5  # the misspelt hook, then one example per hook


@pytest.mark.slow
def test_the_storage_plugin_passes_the_contract_suite(tmp_path: Path) -> None:
    files = {FILE.match(b).group(1): b for b in BLOCKS if FILE.match(b)}  # type: ignore[union-attr]
    assert sorted(files) == ["my_storage.py", "tests/test_my_storage.py"]
    for name, source in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(source, encoding="utf-8")
    (tmp_path / "tests" / "test_counting.py").write_text(
        "from my_storage import CountingStorage\n\n\n"
        "def test_the_wrapper_counts(tmp_path):\n"
        "    store = CountingStorage(f\"sqlite:///{tmp_path / 'c.sqlite3'}\")\n"
        "    with store.transaction():\n"
        "        pass\n"
        "    assert store.transactions == 1\n"
        "    store.close()\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # as the page runs it
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-p",
            "no:schemathesis",
            "-p",
            "no:faker",
            "tests",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", summary).group(1))  # type: ignore[union-attr]
    from paycore.testing import storage_contract

    suite = [name for name in vars(storage_contract) if name.startswith("test_")]
    assert passed >= len(suite) + 1, summary  # every test of the suite, and the counter's
    assert "failed" not in summary and "skipped" not in summary, summary
