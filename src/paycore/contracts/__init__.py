"""paycore's Solidity contracts, shipped as sources and as compiled, committed artifacts.

The artifacts are read at run time (deposit addresses, unsigned transactions), never rebuilt:
the forwarder's bytecode is an input of every deposit address, so it is frozen here and
``tests/chains/evm`` recompiles with the pinned solc to prove it still matches the sources.
Rebuild with ``node scripts/compile_contracts.mjs``.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

#: The contracts that have an artifact in ``artifacts/``.
CONTRACT_NAMES = (
    "PaycoreFactory",
    "PaycoreWallet",
    "PaycoreForwarder",
    "PaycoreStaking",
    "PaycoreBatchPay",
    "TestToken",
    "MockAggregator",
)


@cache
def load_artifact(name: str) -> dict[str, Any]:
    """The compiled artifact of contract ``name``: abi, bytecode, deployedBytecode, compiler.

    Read through importlib.resources so it works from a wheel or a zip as well as a checkout;
    cached because the files never change while the process runs, so treat it as read-only.
    """
    if name not in CONTRACT_NAMES:
        raise KeyError(f"no artifact for contract {name!r}")
    folder = resources.files(__name__).joinpath("artifacts")
    text = folder.joinpath(f"{name}.json").read_text("utf-8")
    artifact: dict[str, Any] = json.loads(text)
    return artifact


def bytecode(name: str) -> bytes:
    """The creation (init) code of contract ``name``, without constructor arguments."""
    return bytes.fromhex(load_artifact(name)["bytecode"].removeprefix("0x"))
