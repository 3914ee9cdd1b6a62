"""The contract suite fails broken stores: ``paycore.testing.storage_contract`` (with the
optional calls' ``storage_contract_reads``) is run, in one pytest subprocess, against every
deliberately broken store of broken_stores.py (each breaks one duty of the contract) and
against the faithful wrapper they are built on. Every broken store must fail at least one
test, by an assertion of the suite rather than by a bug of the wrapper; the faithful one
must pass every test. Once a broken store has failed, its other tests are skipped, which
keeps the run short."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from broken_stores import BROKEN

pytestmark = pytest.mark.slow  # about a minute: the suite once per broken store

HERE = Path(__file__).parent

CONFTEST = """
import json
import os

import pytest
from broken_stores import BROKEN, FaithfulStorage

STORES = {**BROKEN, "FaithfulStorage": FaithfulStorage}
OUTCOMES = {name: {"failed": [], "passed": 0, "wrapper_errors": []} for name in STORES}
WRAPPER_BUGS = {"AttributeError", "TypeError", "NameError", "ImportError", "RecursionError"}


@pytest.fixture(params=sorted(STORES))
def storage(request, clock):
    store = STORES[request.param](clock=clock)
    yield store
    store.close()


def _store(item):
    callspec = getattr(item, "callspec", None)
    return None if callspec is None else callspec.params.get("storage")


def pytest_runtest_setup(item):
    name = _store(item)
    if name in BROKEN and OUTCOMES[name]["failed"]:
        pytest.skip("this broken store has failed already")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    name = _store(item)
    if name is None or report.skipped:
        return
    if report.failed:
        kind = call.excinfo.typename if call.excinfo is not None else "?"
        where = "wrapper_errors" if kind in WRAPPER_BUGS else "failed"
        OUTCOMES[name][where].append(f"{item.name} ({report.when}: {kind})")
    elif report.when == "call":
        OUTCOMES[name]["passed"] += 1


def pytest_sessionfinish(session):
    with open(os.environ["BROKEN_STORES_OUT"], "w") as out:
        json.dump(OUTCOMES, out)
"""

SUITE = (
    "from paycore.testing.storage_contract import *  # noqa: F403\n"
    "from paycore.testing.storage_contract_reads import *  # noqa: F403\n"
)


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    work = tmp_path_factory.mktemp("broken")
    (work / "conftest.py").write_text(CONFTEST)
    (work / "test_broken_contract.py").write_text(SUITE)
    out = work / "outcomes.json"
    env = {
        **os.environ,
        "BROKEN_STORES_OUT": str(out),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:schemathesis",
            "-p",
            "no:faker",
            "--rootdir",
            str(work),
            "-c",
            os.devnull,
            str(work),
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert out.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    found: dict[str, dict[str, object]] = json.loads(out.read_text())
    return found


def test_there_are_at_least_twenty_broken_stores() -> None:
    assert len(BROKEN) >= 20
    for name, store in BROKEN.items():
        assert store.__doc__, f"{name} says which duty it breaks"


def test_the_faithful_wrapper_passes_the_whole_suite(
    outcomes: dict[str, dict[str, object]],
) -> None:
    faithful = outcomes["FaithfulStorage"]
    assert faithful["failed"] == [] and faithful["wrapper_errors"] == [], faithful
    assert isinstance(faithful["passed"], int) and faithful["passed"] > 150


def test_every_broken_store_fails_the_suite(outcomes: dict[str, dict[str, object]]) -> None:
    passed = sorted(name for name in BROKEN if not outcomes[name]["failed"])
    assert not passed, f"these broken stores passed the contract suite: {passed}: " + str(
        {name: outcomes[name] for name in passed}
    )
    errors = {name: o["wrapper_errors"] for name, o in outcomes.items() if o["wrapper_errors"]}
    assert not errors, f"a wrapper, not the suite, failed: {errors}"


@pytest.mark.parametrize("page", ["plugins.md", "testing.md", "embedding.md"])
def test_the_docs_count_the_broken_stores(page: str) -> None:
    text = " ".join((HERE.parent.parent / "docs" / page).read_text().split())
    assert f"{len(BROKEN)} deliberately broken stores" in text


def test_a_race_only_threads_can_see_is_caught_by_a_threaded_test(
    outcomes: dict[str, dict[str, object]],
) -> None:
    """SpendsANonceInTwoSteps refuses every replay one at a time: what fails it is a test
    that spends one message from many threads at once."""
    failed = outcomes["SpendsANonceInTwoSteps"]["failed"]
    assert isinstance(failed, list) and failed
    assert any(word in failed[0] for word in ("concurrent", "parallel")), failed
