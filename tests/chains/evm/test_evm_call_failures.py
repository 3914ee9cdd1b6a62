"""A call that cannot run is the caller's 4xx; a node in trouble is a 502 (EVM side).

The mirror of the Tron finding: an estimate that fails because of the call -- a revert, or
another EVM failure such as an invalid opcode or running out of gas -- becomes "would fail:
<reason>", whatever JSON-RPC code the node picks (anvil answers an invalid opcode with the
generic -32603); an error that is the node's own (rate limit, a missing block, a transport
failure) is raised as the 502 it is, never presented as the contract's refusal.
"""

from __future__ import annotations

from typing import Any

import pytest
from evm_chain import Chain

from paycore.chains.evm import abi
from paycore.chains.evm.rpc import Rpc, RpcError, execution_failure

pytestmark = pytest.mark.node  # anvil comes from npm


def _error_string(text: str) -> str:
    return "0x08c379a0" + abi.encode_call("x()", ["string"], [text])[4:].hex()


@pytest.mark.parametrize(
    ("detail", "reason"),
    [
        (
            {"code": 3, "message": "execution reverted: nope", "data": "0x"},
            "execution reverted: nope",
        ),
        (
            {"code": 3, "message": "execution reverted", "data": _error_string("too poor")},
            "execution reverted: too poor",
        ),
        (
            {"code": -32000, "message": "execution reverted", "data": "0x12345678" + "00" * 32},
            "execution reverted: custom error 0x12345678",
        ),
        (
            {"code": -32015, "message": "VM execution error.", "data": "Reverted 0x"},
            "VM execution error.",
        ),
        ({"code": -32603, "message": "EVM error InvalidFEOpcode"}, "EVM error InvalidFEOpcode"),
        (
            {"code": -32003, "message": "Out of gas: gas required exceeds allowance: 30000000"},
            "Out of gas: gas required exceeds allowance: 30000000",
        ),
        (
            {"code": -32000, "message": "insufficient funds for gas * price + value"},
            "insufficient funds for gas * price + value",
        ),
        ({"code": -32000, "message": "invalid opcode: INVALID"}, "invalid opcode: INVALID"),
        ({"code": -32005, "message": "limit exceeded"}, None),
        ({"code": -32000, "message": "header not found"}, None),
        ({"code": -32601, "message": "the method eth_estimateGas does not exist"}, None),
        ({"code": 429, "message": "Too Many Requests"}, None),
        ("ConnectionError: refused", None),
    ],
)
def test_what_counts_as_the_calls_failure(detail: Any, reason: str | None) -> None:
    assert execution_failure(RpcError("eth_estimateGas", detail)) == reason


def _estimate_error(rpc: Rpc, sender: str, data: str, **extra: Any) -> RpcError:
    with pytest.raises(RpcError) as caught:
        rpc.call("eth_estimateGas", [{"from": sender, "data": data, **extra}])
    return caught.value


def test_anvils_own_answers_are_read_alike(anvil_chain: Chain) -> None:
    """Real answers from anvil: a plain revert, an invalid opcode, an out-of-gas limit --
    the call's failures -- and a malformed request, which is not the call's."""
    rpc = Rpc(anvil_chain.rpc_url)
    sender = anvil_chain.accounts[0].address
    # Creation code that reverts with no data: PUSH1 0 DUP1 REVERT.
    assert execution_failure(_estimate_error(rpc, sender, "0x600080fd")) == "execution reverted"
    # Creation code that is the INVALID opcode.
    assert "InvalidFEOpcode" in (execution_failure(_estimate_error(rpc, sender, "0xfe")) or "")
    # An endless loop (JUMPDEST PUSH1 0 JUMP) under a gas cap.
    looping = _estimate_error(rpc, sender, "0x5b600056", gas="0x10000")
    assert "gas" in (execution_failure(looping) or "").lower()
    # Creation code that reverts with Error("nope"): the reason comes back either way.
    reason_code = _revert_with("nope")
    assert "nope" in (execution_failure(_estimate_error(rpc, sender, reason_code)) or "")
    with pytest.raises(RpcError) as malformed:
        rpc.call("eth_getBlockByNumber", ["0xzz", False])
    assert execution_failure(malformed.value) is None


def _revert_with(text: str) -> str:
    """Creation code that reverts with ``Error(text)``: copy the ABI-encoded error out of
    the code itself into memory, then REVERT with it."""
    payload = bytes.fromhex(_error_string(text)[2:])
    # PUSH2 len, DUP1, PUSH1 offset, PUSH1 0, CODECOPY, PUSH1 0, REVERT
    prefix_len = 12
    code = (
        bytes([0x61]) + len(payload).to_bytes(2, "big")
        + bytes([0x80, 0x60, prefix_len, 0x60, 0x00, 0x39, 0x60, 0x00, 0xFD])
    )  # fmt: skip
    assert len(code) == prefix_len
    return "0x" + (code + payload).hex()
