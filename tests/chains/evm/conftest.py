"""Fixtures for tests that need a real EVM chain: anvil from npm with paycore deployed.

- ``anvil_chain`` (session): a :class:`evm_chain.Chain` on a fresh anvil, stopped at the end.
- ``evm_deployment`` (session): the factory (fee settings set) and two test tokens on it.
- ``evm`` (function): the same deployment, with every change a test makes rolled back after it.

Skipped when ``npm ci`` has not installed anvil, unless ``PAYCORE_REQUIRE_NODE=1`` (CI) makes
that a failure. Helpers live in ``evm_chain`` so tests import them by that name.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from evm_chain import Chain, Deployment, connect, deploy_paycore, find_anvil, run_anvil


def _require_anvil() -> Path:
    executable = find_anvil()
    if executable is not None:
        return executable
    message = "anvil is missing: run `npm ci` to install @foundry-rs/anvil"
    if os.environ.get("PAYCORE_REQUIRE_NODE") == "1":
        pytest.fail(f"PAYCORE_REQUIRE_NODE=1 but {message}")
    pytest.skip(message)


@pytest.fixture(scope="session")
def anvil_chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chain]:
    executable = _require_anvil()
    log_path = tmp_path_factory.mktemp("anvil") / "anvil.log"
    with run_anvil(executable, log_path) as url:
        yield connect(url)


@pytest.fixture(scope="session")
def evm_deployment(anvil_chain: Chain) -> Deployment:
    return deploy_paycore(anvil_chain)


@pytest.fixture
def evm(evm_deployment: Deployment) -> Iterator[Deployment]:
    with evm_deployment.chain.isolated():
        yield evm_deployment
