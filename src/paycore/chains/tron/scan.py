"""Pure matching of full-node blocks and transaction infos against watched deposit addresses.

Shapes are java-tron's HTTP API as TronGrid serves it, with ``visible`` false:

- a block (``getblockbylimitnext``, ``getblockbynum``): ``blockID``, ``block_header.raw_data``
  (``number``, ``parentHash``, ``timestamp`` in ms) and ``transactions``, each with ``txID``,
  ``ret[0].contractRet`` and ``raw_data.contract[0]`` (``type``, ``parameter.value``, whose
  addresses are ``41...`` hex);
- a transaction info (``gettransactioninfobyblocknum``): ``id``, ``blockNumber``, ``receipt``
  and ``log``, a list of ``{address, topics, data}`` with the address as 20 bytes of hex (no
  41) and topics and data as hex without 0x.

The watched set is a dict from an address's 40 lowercase hex digits to its base58 form, so a
transfer costs a slice and a lookup whatever the number of addresses watched, and only
matches are converted further. No I/O here; ``watcher`` feeds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import Any

import attrs

from paycore.chains.common import Transfer as Transfer
from paycore.chains.evm import abi
from paycore.domain.tokens import NATIVE, tron_from_hex, tron_to_hex

RawBlock = Mapping[str, Any]
RawInfo = Mapping[str, Any]

#: Event topics as the HTTP API writes them: hex without 0x.
TRANSFER_TOPIC = abi.TRANSFER_TOPIC[2:]
WITHDRAWN_TOPIC = abi.WITHDRAWN_TOPIC[2:]
COLLECTED_TOPIC = abi.COLLECTED_TOPIC[2:]


def key(address: str) -> str:
    """40 lowercase hex digits of a base58, ``41...`` hex or bare 20-byte hex address."""
    if address.startswith("T"):
        return tron_to_hex(address)[2:]
    text = address.lower().removeprefix("0x")
    return text[-40:]


def watch_keys(addresses: Iterable[str]) -> dict[str, str]:
    """The lookup table the matchers take: hex digits -> base58 address."""
    return {key(a): a for a in addresses if a.startswith("T")}


def base58(digits: str) -> str:
    return tron_from_hex("41" + digits[-40:])


@attrs.frozen
class Withdrawal:
    """A ``Withdrawn(token, to, amount, fee)`` event, not yet checked to be a paycore wallet's."""

    tx_hash: str
    log_index: int
    block_number: int
    emitter: str  # hex digits
    token: str  # hex digits (zero for TRX)
    to: str  # hex digits
    units: int


# -- blocks ------------------------------------------------------------------------------------


def header(block: RawBlock) -> Mapping[str, Any]:
    raw: Mapping[str, Any] = block["block_header"]["raw_data"]
    return raw


def number(block: RawBlock) -> int:
    return int(header(block).get("number") or 0)


def block_id(block: RawBlock) -> str:
    return str(block["blockID"])


def parent_id(block: RawBlock) -> str:
    return str(header(block).get("parentHash") or "")


def timestamp(block: RawBlock) -> int:
    """Unix seconds (the header has milliseconds)."""
    return int(header(block).get("timestamp") or 0) // 1000


def transactions(block: RawBlock) -> list[Mapping[str, Any]]:
    return list(block.get("transactions") or [])


def _contract(tx: Mapping[str, Any]) -> Mapping[str, Any]:
    contracts = (tx.get("raw_data") or {}).get("contract") or [{}]
    first: Mapping[str, Any] = contracts[0]
    return first


def _succeeded(tx: Mapping[str, Any]) -> bool:
    ret = tx.get("ret") or [{}]
    return bool(ret[0].get("contractRet", "SUCCESS") == "SUCCESS")


def contract_calls(block: RawBlock) -> list[str]:
    """txIDs of the block's contract calls: only they can emit logs, so a block without
    any needs no transaction infos."""
    return [
        str(tx["txID"])
        for tx in transactions(block)
        if _contract(tx).get("type") == "TriggerSmartContract"
    ]


def match_trx(block: RawBlock, watched: Mapping[str, str]) -> list[Transfer]:
    """Successful ``TransferContract`` transactions (plain TRX sends) to watched addresses.

    TRX moved by a contract (an internal transaction) is not a payment paycore sees, as an
    EVM call that carries data is not: a payer sends a deposit with a plain transfer.
    """
    found: list[Transfer] = []
    n, bid = number(block), block_id(block)
    for i, tx in enumerate(transactions(block)):
        contract = _contract(tx)
        if contract.get("type") != "TransferContract" or not _succeeded(tx):
            continue
        value = (contract.get("parameter") or {}).get("value") or {}
        to_raw = value.get("to_address")
        to = watched.get(key(to_raw)) if isinstance(to_raw, str) else None
        units = int(value.get("amount") or 0)
        if to is None or units <= 0:
            continue
        found.append(
            Transfer(
                tx_hash=str(tx["txID"]),
                log_index=-1,
                tx_index=i,
                block_number=n,
                block_hash=bid,
                token=NATIVE,
                from_=base58(key(str(value.get("owner_address")))),
                to=to,
                units=units,
            )
        )
    return found


# -- transaction infos -------------------------------------------------------------------------


def _topics(log: Mapping[str, Any]) -> list[str]:
    return [str(t).lower().removeprefix("0x") for t in log.get("topics") or []]


def _data(log: Mapping[str, Any]) -> str:
    return str(log.get("data") or "").lower().removeprefix("0x")


def _word(data: str, index: int) -> int:
    return int(data[64 * index : 64 * (index + 1)] or "0", 16)


def _info_ok(info: RawInfo) -> bool:
    receipt = info.get("receipt") or {}
    return info.get("result") != "FAILED" and receipt.get("result", "SUCCESS") == "SUCCESS"


def match_trc20(
    block: RawBlock,
    infos: Iterable[RawInfo],
    watched: Mapping[str, str],
    tokens: Mapping[str, str],
) -> list[Transfer]:
    """TRC20 ``Transfer`` logs of watched token contracts (``tokens``: hex digits -> base58)
    whose recipient is watched. A transfer into a wallet in a transaction where that wallet
    also emits ``Collected`` is the wallet sweeping its own forwarder, not a payment."""
    positions = {str(tx["txID"]): i for i, tx in enumerate(transactions(block))}
    n, bid = number(block), block_id(block)
    found: list[Transfer] = []
    for info in infos:
        if not _info_ok(info):
            continue
        logs = list(info.get("log") or [])
        sweeps: Set[str] = {
            key(str(log.get("address"))) for log in logs if _topics(log)[:1] == [COLLECTED_TOPIC]
        }
        for index, log in enumerate(logs):
            token = tokens.get(key(str(log.get("address"))))
            topics = _topics(log)
            if token is None or len(topics) != 3 or topics[0] != TRANSFER_TOPIC:
                continue
            to_key = topics[2][-40:]
            to = watched.get(to_key)
            data = _data(log)
            if to is None or to_key in sweeps or len(data) != 64:
                continue
            found.append(
                Transfer(
                    tx_hash=str(info["id"]),
                    log_index=index,
                    tx_index=positions.get(str(info["id"]), len(positions)),
                    block_number=n,
                    block_hash=bid,
                    token=token,
                    from_=base58(topics[1]),
                    to=to,
                    units=_word(data, 0),
                )
            )
    return found


def withdrawals(block: RawBlock, infos: Iterable[RawInfo]) -> list[Withdrawal]:
    """Every ``Withdrawn`` event in the block's successful transactions (any emitter: the
    watcher keeps those of genuine paycore wallets)."""
    found: list[Withdrawal] = []
    for info in infos:
        if not _info_ok(info):
            continue
        for index, log in enumerate(info.get("log") or []):
            topics = _topics(log)
            data = _data(log)
            if len(topics) != 3 or topics[0] != WITHDRAWN_TOPIC or len(data) != 128:
                continue
            found.append(
                Withdrawal(
                    tx_hash=str(info["id"]),
                    log_index=index,
                    block_number=number(block),
                    emitter=key(str(log.get("address"))),
                    token=topics[1][-40:],
                    to=topics[2][-40:],
                    units=_word(data, 0),
                )
            )
    return found


def infos_fit(block: RawBlock, infos: Iterable[RawInfo]) -> bool:
    """Whether ``infos`` belong to this very block: each is one of its transactions, and
    every contract call has one. A node that moved to another fork between the two reads
    answers with another block's infos, and the range must be read again."""
    ids = {str(tx["txID"]) for tx in transactions(block)}
    seen = set()
    for info in infos:
        tx_id = str(info.get("id"))
        if tx_id not in ids or int(info.get("blockNumber", number(block))) != number(block):
            return False
        seen.add(tx_id)
    return set(contract_calls(block)) <= seen
