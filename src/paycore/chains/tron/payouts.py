"""Batch payouts on Tron: the ``PaycoreBatchPay.pay`` call for the TVM, as TronGrid's
``triggersmartcontract`` takes it (``function_selector`` and ``parameter``).

The contract is the EVM one compiled unchanged (the TVM runs the same bytecode); only the
addresses differ: a Tron address is ``0x41`` and 20 bytes, and the ABI carries the 20 bytes.
TRC20 rows move by ``transferFrom(msg.sender, ...)`` like ERC20 ones, TRX rows by
``msg.value`` (``call_value`` in SUN). What is here is the encoding, checked against
TronWeb's (tests/tron/test_tron_payouts_tronweb.py); the Tron backend does not build or
confirm batches yet (docs/payouts.md, "Not done yet").
"""

from __future__ import annotations

from collections.abc import Sequence

from eth_abi.abi import encode as abi_encode

from paycore.domain.tokens import NATIVE, tron_to_hex
from paycore.payouts.rows import PayoutRow

from ..evm import abi

#: The function, as ``triggersmartcontract``'s ``function_selector`` names it.
PAY = "pay(bytes32,address[],address[],uint256[])"
_TYPES = ["bytes32", "address[]", "address[]", "uint256[]"]


def _word(address: str) -> str:
    """The ABI's 20 bytes of a Tron address (base58); the zero address stays the coin."""
    if address == NATIVE:
        return NATIVE
    return "0x" + tron_to_hex(address)[2:]


def pay_parameter(ref: bytes, rows: Sequence[PayoutRow]) -> str:
    """``parameter`` of the call: the ABI-encoded arguments, hex without 0x or selector."""
    encoded = abi_encode(
        _TYPES,
        [
            ref,
            [_word(r.token) for r in rows],
            [_word(r.to) for r in rows],
            [r.value for r in rows],
        ],
    )
    return encoded.hex()


def pay_data(ref: bytes, rows: Sequence[PayoutRow]) -> bytes:
    """The whole calldata: the selector, then :func:`pay_parameter`."""
    return abi.selector(PAY) + bytes.fromhex(pay_parameter(ref, rows))


def call_value(rows: Sequence[PayoutRow]) -> int:
    """SUN the call carries: the sum of the TRX rows."""
    return sum(r.value for r in rows if r.token == NATIVE)
