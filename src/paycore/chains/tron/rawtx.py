"""Reading a Tron transaction's ``raw_data_hex``: the bytes its ``txID`` hashes and a wallet
signs.

A Tron wallet signs ``txID = sha256(raw_data_hex)``; the ``raw_data`` JSON beside it is only
a rendering, and a node (or anyone between) could hand out JSON that says one thing and
bytes that do another. So paycore reads the protobuf bytes themselves (``Transaction.raw``
of TRON's ``tron.proto``) instead of trusting the JSON: every field of ``raw``, its one
contract and the contract's parameter, with anything beyond what paycore builds named in
``RawCall.extras``. The reader is a minimal protobuf decoder: varints and length-delimited
fields, which is all ``raw`` and its ``TriggerSmartContract`` / ``TransferContract`` use;
fixed-width fields are skipped but still reported.
"""

from __future__ import annotations

import attrs

from paycore.crypto.hashing import sha256
from paycore.errors import InvalidInput

#: ``Transaction.Contract.ContractType`` values paycore reads.
TRANSFER_CONTRACT = 1
TRIGGER_SMART_CONTRACT = 31

_TYPE_URL = "type.googleapis.com/protocol."


class Malformed(ValueError):
    """Bytes that are not the protobuf the field promised."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf) or shift > 63:
            raise Malformed("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) in order: an int for varints, bytes for length-delimited;
    fixed-width fields are skipped (``raw`` has none that paycore reads; :func:`numbers`
    still sees them)."""
    return [(n, v) for n, wire, v in _entries(buf) if wire in (0, 2)]


def numbers(buf: bytes) -> list[int]:
    """Every field number present, fixed-width ones included, in order."""
    return [n for n, _wire, _v in _entries(buf)]


def _entries(buf: bytes) -> list[tuple[int, int, int | bytes]]:
    out: list[tuple[int, int, int | bytes]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
            out.append((number, wire, value))
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise Malformed("truncated field")
            out.append((number, wire, buf[pos : pos + size]))
            pos += size
        elif wire == 1:
            out.append((number, wire, b""))
            pos += 8
        elif wire == 5:
            out.append((number, wire, b""))
            pos += 4
        else:
            raise Malformed(f"wire type {wire}")
    if pos != len(buf):
        raise Malformed("truncated fixed-width field")
    return out


def _one(items: list[tuple[int, int | bytes]], number: int, kind: type, default: object) -> object:
    found = [v for n, v in items if n == number]
    if len(found) > 1:
        raise Malformed(f"field {number} repeated")
    if not found:
        return default
    if not isinstance(found[0], kind):
        raise Malformed(f"field {number} has the wrong wire type")
    return found[0]


#: The fields of each message paycore builds, by number (``tron.proto``); anything else in
#: a transaction is reported in ``RawCall.extras`` under the name given here.
RAW_FIELDS = {
    1: "ref_block_bytes",
    4: "ref_block_hash",
    8: "expiration",
    11: "contract",
    14: "timestamp",
    18: "fee_limit",
}
RAW_EXTRAS = {3: "ref_block_num", 9: "auths", 10: "raw_data.data", 12: "scripts"}
CONTRACT_FIELDS = {1: "type", 2: "parameter"}
CONTRACT_EXTRAS = {3: "provider", 4: "ContractName", 5: "Permission_id"}
ANY_FIELDS = {1: "type_url", 2: "value"}
TRIGGER_FIELDS = {1: "owner_address", 2: "contract_address", 3: "call_value", 4: "data"}
TRIGGER_EXTRAS = {5: "call_token_value", 6: "token_id"}
TRANSFER_FIELDS = {1: "owner_address", 2: "to_address", 3: "amount"}


def _extras(buf: bytes, known: dict[int, str], named: dict[int, str], where: str) -> list[str]:
    """Names of the fields in ``buf`` outside ``known``: a named one (``Permission_id``) or
    ``{where} field N``."""
    found = [n for n in numbers(buf) if n not in known]
    return [named.get(n, f"{where} field {n}") for n in dict.fromkeys(found)]


@attrs.frozen
class RawCall:
    """What a signed or unsigned Tron transaction does, read from its protobuf bytes.

    Addresses are 21 bytes as hex (``41...``), as the protocol stores them; ``to`` is the
    contract of a ``TriggerSmartContract`` or the recipient of a ``TransferContract``.
    ``extras`` names every field present beyond those paycore builds (a memo in
    ``raw_data.data``, a ``Permission_id``, TRC10 tokens attached by ``call_token_value``,
    unknown numbers): a relayed transaction may carry them, one paycore hands out may not.
    """

    contract_type: int
    owner: str
    to: str
    call_value: int  # SUN sent (TransferContract: the amount)
    data: bytes  # calldata; empty for a TransferContract
    fee_limit: int
    expiration: int  # unix ms
    timestamp: int = 0  # unix ms, when the transaction was built
    ref_block_bytes: bytes = b""  # bytes 6..8 of the reference block's number
    ref_block_hash: bytes = b""  # bytes 8..16 of the reference block's id
    type_url: str = ""
    extras: tuple[str, ...] = ()


def read_raw(raw: bytes) -> RawCall:
    """Decode ``Transaction.raw``; a transaction with other than exactly one contract, or one
    paycore does not build (not a transfer or contract call), raises :class:`Malformed`."""
    top = fields(raw)
    contracts = [v for n, v in top if n == 11]
    if len(contracts) != 1 or not isinstance(contracts[0], bytes):
        raise Malformed("a transaction carries exactly one contract")
    contract = fields(contracts[0])
    contract_type = _one(contract, 1, int, 0)
    parameter = _one(contract, 2, bytes, b"")
    assert isinstance(contract_type, int) and isinstance(parameter, bytes)
    any_fields = fields(parameter)
    type_url = _one(any_fields, 1, bytes, b"")
    value = _one(any_fields, 2, bytes, b"")
    assert isinstance(type_url, bytes) and isinstance(value, bytes)
    inner = fields(value)
    if contract_type == TRIGGER_SMART_CONTRACT:
        expected_url, inner_known, inner_named = (
            "TriggerSmartContract",
            TRIGGER_FIELDS,
            TRIGGER_EXTRAS,
        )
    elif contract_type == TRANSFER_CONTRACT:
        expected_url, inner_known, inner_named = "TransferContract", TRANSFER_FIELDS, {}
    else:
        raise Malformed(f"contract type {contract_type} is not a transfer or a contract call")
    if type_url.decode("ascii", "replace") != _TYPE_URL + expected_url:
        raise Malformed("the parameter's type_url does not match the contract type")
    owner = _one(inner, 1, bytes, b"")
    to = _one(inner, 2, bytes, b"")
    call_value = _one(inner, 3, int, 0)
    data = _one(inner, 4, bytes, b"") if contract_type == TRIGGER_SMART_CONTRACT else b""
    fee_limit = _one(top, 18, int, 0)
    expiration = _one(top, 8, int, 0)
    timestamp = _one(top, 14, int, 0)
    ref_bytes = _one(top, 1, bytes, b"")
    ref_hash = _one(top, 4, bytes, b"")
    assert isinstance(owner, bytes) and isinstance(to, bytes) and isinstance(data, bytes)
    assert isinstance(call_value, int) and isinstance(fee_limit, int)
    assert isinstance(expiration, int) and isinstance(timestamp, int)
    assert isinstance(ref_bytes, bytes) and isinstance(ref_hash, bytes)
    if len(owner) != 21 or len(to) != 21:
        raise Malformed("addresses must be 21 bytes")
    extras = [
        *_extras(raw, RAW_FIELDS, RAW_EXTRAS, "raw_data"),
        *_extras(contracts[0], CONTRACT_FIELDS, CONTRACT_EXTRAS, "contract"),
        *_extras(parameter, ANY_FIELDS, {}, "parameter"),
        *_extras(value, inner_known, inner_named, "parameter.value"),
    ]
    return RawCall(
        contract_type,
        owner.hex(),
        to.hex(),
        call_value,
        data,
        fee_limit,
        expiration,
        timestamp=timestamp,
        ref_block_bytes=ref_bytes,
        ref_block_hash=ref_hash,
        type_url=type_url.decode("ascii", "replace"),
        extras=tuple(extras),
    )


def read_transaction(tx: object, field: str) -> tuple[str, RawCall]:
    """(txID, what it does) of a transaction object ``{txID, raw_data_hex, ...}``; the txID
    must be the sha256 of the raw bytes, as every wallet computes it before signing."""
    if not isinstance(tx, dict):
        raise InvalidInput(field, "must be a Tron transaction object")
    raw_hex, tx_id = tx.get("raw_data_hex"), tx.get("txID")
    if not isinstance(raw_hex, str) or not isinstance(tx_id, str):
        raise InvalidInput(field, "needs txID and raw_data_hex")
    try:
        raw = bytes.fromhex(raw_hex)
    except ValueError:
        raise InvalidInput(field, "raw_data_hex is not hex") from None
    if sha256(raw).hex() != tx_id.lower():
        raise InvalidInput(field, "txID is not the sha256 of raw_data_hex")
    try:
        return tx_id.lower(), read_raw(raw)
    except Malformed as exc:
        raise InvalidInput(field, f"raw_data_hex: {exc}") from None


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def pb_bytes(number: int, data: bytes) -> bytes:
    """One length-delimited protobuf field (bytes, string or message)."""
    return _encode_varint(number << 3 | 2) + _encode_varint(len(data)) + data


def pb_uint(number: int, value: int) -> bytes:
    """One varint protobuf field; protobuf leaves a zero out, and so does this."""
    return _encode_varint(number << 3) + _encode_varint(value) if value else b""


def signed_transaction(raw: bytes, signatures: list[object]) -> bytes:
    """The protobuf ``Transaction`` (``raw_data`` = 1, ``signature`` = 2, repeated) for
    ``broadcasthex``: the very bytes that were checked, with their signatures, so the node
    cannot rebuild anything from JSON. Each signature is 65 bytes of hex."""
    out = bytearray(b"\x0a" + _encode_varint(len(raw)) + raw)
    for signature in signatures:
        if not isinstance(signature, str):
            raise ValueError("a signature is hex text")
        sig = bytes.fromhex(signature.removeprefix("0x"))
        if len(sig) != 65:
            raise ValueError("a signature has 65 bytes")
        out += b"\x12" + _encode_varint(len(sig)) + sig
    return bytes(out)
