"""Reading a signed raw transaction before relaying it (/deployWallet).

paycore relays only what it can vouch for: a transaction to this chain's factory calling
``deployWallet``, nothing else, so the endpoint cannot be used as an open relay for
arbitrary transactions. Decoding is plain RLP (EIP-2718 envelopes for typed transactions);
blob (type 3) and set-code (type 4) transactions are refused outright.
"""

from __future__ import annotations

import attrs
import rlp
from eth_account import Account

from paycore.domain.tokens import to_checksum
from paycore.errors import InvalidInput

# Positions of (chainId, nonce, to, value, data) in each envelope's RLP list.
_LAYOUTS: dict[int, tuple[int | None, int, int, int, int]] = {
    0: (None, 0, 3, 4, 5),  # legacy: nonce, gasPrice, gas, to, value, data, v, r, s
    1: (0, 1, 4, 5, 6),  # EIP-2930: chainId, nonce, gasPrice, gas, to, value, data, ...
    2: (0, 1, 5, 6, 7),  # EIP-1559: chainId, nonce, tip, maxFee, gas, to, value, data, ...
}
_FIELD_COUNTS = {0: 9, 1: 11, 2: 12}
#: Where the access list (the one nested list) sits in each envelope.
_ACCESS_LIST_AT = {0: -1, 1: 7, 2: 8}


@attrs.frozen
class RawTx:
    """What a relay needs to know about a signed transaction."""

    type: int
    chain_id: int | None  # None: a pre-EIP-155 legacy transaction, valid on every chain
    nonce: int
    to: str | None  # None: contract creation
    value: int
    data: bytes
    sender: str


def _int(raw: bytes) -> int:
    return int.from_bytes(raw, "big")


def decode_raw_tx(raw_hex: object, field: str = "rawTx") -> RawTx:
    """Decode and recover the sender of a signed transaction given as 0x hex."""
    if not isinstance(raw_hex, str) or not raw_hex.startswith("0x"):
        raise InvalidInput(field, "must be 0x-prefixed hex")
    try:
        raw = bytes.fromhex(raw_hex[2:])
    except ValueError:
        raise InvalidInput(field, "must be 0x-prefixed hex") from None
    if not raw:
        raise InvalidInput(field, "is empty")
    tx_type, payload = (0, raw) if raw[0] >= 0xC0 else (raw[0], raw[1:])
    if tx_type not in _LAYOUTS:
        raise InvalidInput(field, f"transaction type {tx_type} is not relayed")
    try:
        items = rlp.decode(payload)
    except Exception:
        raise InvalidInput(field, "not an RLP-encoded transaction") from None
    if not isinstance(items, list) or len(items) != _FIELD_COUNTS[tx_type]:
        raise InvalidInput(field, "not a signed transaction")
    nested = _ACCESS_LIST_AT[tx_type]
    if not all(isinstance(item, bytes) for i, item in enumerate(items) if i != nested):
        raise InvalidInput(field, "not a signed transaction")
    chain_pos, nonce_pos, to_pos, value_pos, data_pos = _LAYOUTS[tx_type]
    if chain_pos is None:
        v = _int(items[6])
        chain_id = None if v in (27, 28) else (v - 35) // 2
    else:
        chain_id = _int(items[chain_pos])
    to_raw = items[to_pos]
    if to_raw and len(to_raw) != 20:
        raise InvalidInput(field, "bad recipient")
    try:
        sender = Account.recover_transaction(raw)
    except Exception:
        raise InvalidInput(field, "the signature does not recover a sender") from None
    return RawTx(
        type=tx_type,
        chain_id=chain_id,
        nonce=_int(items[nonce_pos]),
        to=to_checksum("0x" + to_raw.hex()) if to_raw else None,
        value=_int(items[value_pos]),
        data=bytes(items[data_pos]),
        sender=to_checksum(sender),
    )
