"""A transaction the node built, checked field by field before a merchant is asked to sign it.

On Tron the node builds the transactions /initWallet and /initWithdraw hand out (it picks
the reference block and expiry), and the merchant signs ``txID = sha256(raw_data_hex)``
in TronLink or TronWeb, which show the ``raw_data`` JSON. So the node is trusted for
nothing: every field of the protobuf bytes must be what paycore asked for or what a node
must add, the JSON must say the same as the bytes, and anything else -- a memo in
``raw_data.data``, a ``Permission_id`` (which would let another permission's keys sign),
TRC10 tokens attached with ``call_token_value``, a second contract, an expiry far away, a
field paycore has no name for -- is refused with :class:`UnexpectedTransaction` (502): the
node is misbehaving, and nothing it built reaches the merchant.

Pure functions: ``txbuild`` calls :func:`check` with the node's answer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs

from paycore.crypto.hashing import sha256
from paycore.domain.tokens import normalize_tron, tron_to_hex
from paycore.errors import InvalidInput, PaycoreError

from . import rawtx
from .node import NodeError

PATH = "wallet/triggersmartcontract"

#: java-tron makes a transaction valid for 60 s (its head block's time plus
#: ``trx.expiration.timeInMilliseconds``). A node that asks for a signature valid much
#: longer wants one it can use later; 10 minutes leaves room for a node set up generously.
MAX_VALIDITY_MS = 10 * 60 * 1000
#: How far the node's clock may be from paycore's (ms).
CLOCK_SKEW_MS = 2 * 60 * 1000

_HEX = re.compile(r"(?:[0-9a-fA-F]{2})*")
_CONTRACT_TYPES = {"TriggerSmartContract": rawtx.TRIGGER_SMART_CONTRACT}

#: The keys of the JSON rendering, level by level: what java-tron writes for the call
#: paycore asks for (``call_value`` only when not zero, as protobuf's JSON leaves zeros out).
RAW_KEYS = frozenset(
    {"contract", "ref_block_bytes", "ref_block_hash", "expiration", "timestamp", "fee_limit"}
)
CONTRACT_KEYS = frozenset({"parameter", "type"})
PARAMETER_KEYS = frozenset({"value", "type_url"})
VALUE_KEYS = frozenset({"owner_address", "contract_address", "data", "call_value"})


class UnexpectedTransaction(NodeError):
    """The node built something other than the call asked for (502). The text names the
    field: ``node returned an unexpected transaction: <field> (<how>)``."""

    def __init__(self, field: str, detail: str = "") -> None:
        self.path = PATH
        self.field = field
        self.detail = detail
        PaycoreError.__init__(
            self,
            f"node returned an unexpected transaction: {field}"
            + (f" ({detail})" if detail else ""),
        )


@attrs.frozen
class Expected:
    """What paycore asked the node to build: a ``TriggerSmartContract`` from ``owner`` to
    ``contract`` (both ``41...`` hex) with this calldata, call value and fee limit."""

    owner: str
    contract: str
    data: bytes
    call_value: int
    fee_limit: int


def check(expected: Expected, tx: Mapping[str, Any], now_ms: int | None) -> rawtx.RawCall:
    """Check a built ``{txID, raw_data, raw_data_hex, visible}`` against ``expected``, field
    by field; returns the decoded call. ``now_ms`` (paycore's clock) bounds the expiry."""
    raw_hex = tx.get("raw_data_hex")
    if not isinstance(raw_hex, str) or not raw_hex or not _HEX.fullmatch(raw_hex):
        raise UnexpectedTransaction("raw_data_hex", "missing or not hex")
    raw = bytes.fromhex(raw_hex)
    tx_id = tx.get("txID")
    if not isinstance(tx_id, str) or tx_id.lower() != sha256(raw).hex():
        raise UnexpectedTransaction("txID", "not the sha256 of raw_data_hex")
    try:
        built = rawtx.read_raw(raw)
    except rawtx.Malformed as exc:
        raise UnexpectedTransaction("raw_data_hex", str(exc)) from None
    if built.extras:
        raise UnexpectedTransaction(built.extras[0], "not asked for")
    _check_call(expected, built)
    _check_validity(built, now_ms)
    visible = tx.get("visible", False)
    if not isinstance(visible, bool):
        raise UnexpectedTransaction("visible", "not a boolean")
    _check_json(tx.get("raw_data"), built)
    return built


def _check_call(expected: Expected, built: rawtx.RawCall) -> None:
    if built.contract_type != rawtx.TRIGGER_SMART_CONTRACT:
        raise UnexpectedTransaction("contract type", f"{built.contract_type}, not a contract call")
    for field, got, wanted in (
        ("owner_address", built.owner, expected.owner),
        ("contract_address", built.to, expected.contract),
        ("call_value", built.call_value, expected.call_value),
        ("fee_limit", built.fee_limit, expected.fee_limit),
    ):
        if got != wanted:
            raise UnexpectedTransaction(field, f"{got}, asked {wanted}")
    if built.data != expected.data:
        raise UnexpectedTransaction("data", "not the calldata asked for")


def _check_validity(built: rawtx.RawCall, now_ms: int | None) -> None:
    """The reference block is named, and the transaction expires after it was built and
    not long after now (:data:`MAX_VALIDITY_MS`)."""
    if len(built.ref_block_bytes) != 2:
        raise UnexpectedTransaction("ref_block_bytes", "must be 2 bytes")
    if len(built.ref_block_hash) != 8:
        raise UnexpectedTransaction("ref_block_hash", "must be 8 bytes")
    if built.timestamp <= 0:
        raise UnexpectedTransaction("timestamp", "missing")
    if not built.timestamp < built.expiration <= built.timestamp + MAX_VALIDITY_MS:
        raise UnexpectedTransaction(
            "expiration", f"{built.expiration} is not within {MAX_VALIDITY_MS} ms of its timestamp"
        )
    if now_ms is not None and not (
        now_ms - CLOCK_SKEW_MS < built.expiration <= now_ms + MAX_VALIDITY_MS + CLOCK_SKEW_MS
    ):
        raise UnexpectedTransaction(
            "expiration", f"{built.expiration} is not within {MAX_VALIDITY_MS} ms of now"
        )


def _check_json(raw_data: object, built: rawtx.RawCall) -> None:
    """``raw_data`` must say what the bytes say, key for key: it is what a wallet shows the
    merchant, and what a node would rebuild the transaction from."""
    raw = _object(raw_data, "raw_data", RAW_KEYS)
    contracts = raw.get("contract")
    if not isinstance(contracts, list) or len(contracts) != 1:
        raise UnexpectedTransaction("raw_data.contract", "not exactly one contract")
    contract = _object(contracts[0], "raw_data.contract[0]", CONTRACT_KEYS)
    parameter = _object(contract.get("parameter"), "raw_data.contract[0].parameter", PARAMETER_KEYS)
    value = _object(parameter.get("value"), "raw_data.contract[0].parameter.value", VALUE_KEYS)
    seen = {
        "contract[0].type": _CONTRACT_TYPES.get(str(contract.get("type"))),
        "contract[0].parameter.type_url": parameter.get("type_url"),
        "contract[0].parameter.value.owner_address": _address(value.get("owner_address")),
        "contract[0].parameter.value.contract_address": _address(value.get("contract_address")),
        "contract[0].parameter.value.data": _hex(value.get("data")),
        "contract[0].parameter.value.call_value": _int(value.get("call_value", 0)),
        "ref_block_bytes": _hex(raw.get("ref_block_bytes")),
        "ref_block_hash": _hex(raw.get("ref_block_hash")),
        "expiration": _int(raw.get("expiration")),
        "timestamp": _int(raw.get("timestamp")),
        "fee_limit": _int(raw.get("fee_limit", 0)),
    }
    said = {
        "contract[0].type": built.contract_type,
        "contract[0].parameter.type_url": built.type_url,
        "contract[0].parameter.value.owner_address": built.owner,
        "contract[0].parameter.value.contract_address": built.to,
        "contract[0].parameter.value.data": built.data,
        "contract[0].parameter.value.call_value": built.call_value,
        "ref_block_bytes": built.ref_block_bytes,
        "ref_block_hash": built.ref_block_hash,
        "expiration": built.expiration,
        "timestamp": built.timestamp,
        "fee_limit": built.fee_limit,
    }
    for key, wanted in said.items():
        if seen[key] != wanted:
            raise UnexpectedTransaction(f"raw_data.{key}", "does not match raw_data_hex")


def _object(value: object, where: str, keys: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise UnexpectedTransaction(where, "missing")
    for key in value:
        if key not in keys:
            raise UnexpectedTransaction(f"{where}.{key}", "not asked for")
    return value


def _address(value: object) -> str | None:
    """``41...`` hex of a base58 (``visible``) or hex address; None if it is neither."""
    try:
        return tron_to_hex(normalize_tron(value))
    except InvalidInput:
        return None


def _hex(value: object) -> bytes | None:
    if not isinstance(value, str) or not _HEX.fullmatch(value):
        return None
    return bytes.fromhex(value)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
