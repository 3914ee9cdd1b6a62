"""Pure matching of full-node blocks and transaction infos against watched deposit addresses.

Shapes are java-tron's HTTP API as TronGrid serves it, with ``visible`` false:

- a block (``getblockbylimitnext``, ``getblockbynum``): ``blockID``, ``block_header.raw_data``
  (``number``, ``parentHash``, ``timestamp`` in ms) and ``transactions``, each with ``txID``,
  ``ret[0].contractRet`` and ``raw_data.contract[0]`` (``type``, ``parameter.value``, whose
  addresses are ``41...`` hex);
- a transaction info (``gettransactioninfobyblocknum``): ``id``, ``blockNumber``, ``receipt``
  and ``log``, a list of ``{address, topics, data}`` with the address as 20 bytes of hex (no
  41) and topics and data as hex without 0x.

A block is first reduced to a :class:`BlockDigest` (its place in the chain, its TRX sends,
then the token logs of its infos), so the raw JSON -- some 300 KB a mainnet block -- is
dropped as soon as it is read. The watched set is a dict from an address's 40 lowercase hex
digits to its base58 form, so a transfer costs a slice and a lookup whatever the number of
addresses watched, and only matches are converted further. No I/O here; ``reader`` feeds it.
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


def contract_calls(block: RawBlock) -> dict[str, int]:
    """The block's contract calls: txID -> position in the block. Only they can emit logs,
    so a block without any needs no transaction infos."""
    return {
        str(tx["txID"]): i
        for i, tx in enumerate(transactions(block))
        if _contract(tx).get("type") == "TriggerSmartContract"
    }


@attrs.frozen
class Send:
    """A successful ``TransferContract`` (a plain TRX send) of a block, any recipient."""

    tx_id: str
    tx_index: int
    sender: str  # hex digits
    to: str  # hex digits
    units: int


@attrs.frozen
class TokenLog:
    """A ``Transfer`` log of a followed token contract in a successful transaction;
    ``sweep`` when the recipient also emits ``Collected`` in that transaction (a wallet
    sweeping its own forwarder, not a payment)."""

    tx_id: str
    tx_index: int
    log_index: int
    token: str  # hex digits
    sender: str  # hex digits
    to: str  # hex digits
    units: int
    sweep: bool


@attrs.define
class BlockDigest:
    """What the watcher keeps of a block: its place in the chain, its TRX sends, and --
    once its transaction infos are read -- its token logs and ``Withdrawn`` events.

    A mainnet block is some 300 KB of JSON; its digest holds only the few fields matching
    needs, so a range of blocks costs little memory, and a digest read once is never read
    again while it waits (a later pass matches it against the watched addresses of then).
    ``calls`` (contract-call txID -> position) is what the infos must cover; it is emptied
    once they are read.
    """

    number: int
    block_id: str
    parent: str
    timestamp: int
    sends: tuple[Send, ...]
    calls: dict[str, int]
    logs: tuple[TokenLog, ...] | None = None
    withdrawals: tuple[Withdrawal, ...] = ()

    @property
    def needs_infos(self) -> bool:
        return self.logs is None


def digest(block: RawBlock) -> BlockDigest:
    """A block's digest; a block without contract calls needs no infos (``logs`` empty)."""
    sends: list[Send] = []
    for i, tx in enumerate(transactions(block)):
        contract = _contract(tx)
        if contract.get("type") != "TransferContract" or not _succeeded(tx):
            continue
        value = (contract.get("parameter") or {}).get("value") or {}
        to_raw = value.get("to_address")
        units = int(value.get("amount") or 0)
        if not isinstance(to_raw, str) or units <= 0:
            continue
        sender = key(str(value.get("owner_address")))
        sends.append(Send(str(tx["txID"]), i, sender, key(to_raw), units))
    calls = contract_calls(block)
    return BlockDigest(
        number=number(block),
        block_id=block_id(block),
        parent=parent_id(block),
        timestamp=timestamp(block),
        sends=tuple(sends),
        calls=calls,
        logs=None if calls else (),
    )


def match_trx(block: BlockDigest, watched: Mapping[str, str]) -> list[Transfer]:
    """Successful ``TransferContract`` transactions (plain TRX sends) to watched addresses.

    TRX moved by a contract (an internal transaction) is not a payment paycore sees, as an
    EVM call that carries data is not: a payer sends a deposit with a plain transfer.
    """
    return [
        Transfer(
            tx_hash=send.tx_id,
            log_index=-1,
            tx_index=send.tx_index,
            block_number=block.number,
            block_hash=block.block_id,
            token=NATIVE,
            from_=base58(send.sender),
            to=watched[send.to],
            units=send.units,
        )
        for send in block.sends
        if send.to in watched
    ]


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


class InfosMismatch(ValueError):
    """Transaction infos that do not belong to the block read (another fork's), or that
    leave one of its contract calls out."""


def add_infos(block: BlockDigest, infos: Iterable[RawInfo], tokens: Set[str]) -> None:
    """Read the block's transaction infos into its digest: the ``Transfer`` logs of the
    followed token contracts (``tokens``: hex digits) and every ``Withdrawn`` event.

    The infos must belong to this very block: each one of its transactions, of its number,
    and every contract call covered. A node that moved to another fork between the two reads
    answers with another block's infos (:class:`InfosMismatch`)."""
    infos = list(infos)
    seen: set[str] = set()
    for info in infos:
        tx_id = str(info.get("id"))
        if int(info.get("blockNumber", block.number)) != block.number:
            raise InfosMismatch(f"infos of block {info.get('blockNumber')}")
        seen.add(tx_id)
    missing = block.calls.keys() - seen
    if missing:
        raise InfosMismatch(f"{len(missing)} of {len(block.calls)} contract calls have no info")
    logs: list[TokenLog] = []
    withdrawn: list[Withdrawal] = []
    for info in infos:
        tx_id = str(info["id"])
        position = block.calls.get(tx_id)
        if position is None or not _info_ok(info):
            continue  # not a contract call of this block (a TRX send's info), or failed
        entries = list(info.get("log") or [])
        sweeps: Set[str] = {
            key(str(e.get("address"))) for e in entries if _topics(e)[:1] == [COLLECTED_TOPIC]
        }
        for index, entry in enumerate(entries):
            topics, data = _topics(entry), _data(entry)
            if len(topics) != 3:
                continue
            emitter = key(str(entry.get("address")))
            if topics[0] == TRANSFER_TOPIC and emitter in tokens and len(data) == 64:
                to = topics[2][-40:]
                logs.append(
                    TokenLog(
                        tx_id,
                        position,
                        index,
                        emitter,
                        topics[1][-40:],
                        to,
                        _word(data, 0),
                        to in sweeps,
                    )
                )
            elif topics[0] == WITHDRAWN_TOPIC and len(data) == 128:
                withdrawn.append(
                    Withdrawal(
                        tx_hash=tx_id,
                        log_index=index,
                        block_number=block.number,
                        emitter=emitter,
                        token=topics[1][-40:],
                        to=topics[2][-40:],
                        units=_word(data, 0),
                    )
                )
    block.logs = tuple(logs)
    block.withdrawals = tuple(withdrawn)
    block.calls = {}


def match_trc20(
    block: BlockDigest, watched: Mapping[str, str], tokens: Mapping[str, str]
) -> list[Transfer]:
    """TRC20 ``Transfer`` logs (read by :func:`add_infos`) whose recipient is watched
    (``tokens``: hex digits -> base58), sweeps left out."""
    return [
        Transfer(
            tx_hash=log.tx_id,
            log_index=log.log_index,
            tx_index=log.tx_index,
            block_number=block.number,
            block_hash=block.block_id,
            token=tokens[log.token],
            from_=base58(log.sender),
            to=watched[log.to],
            units=log.units,
        )
        for log in block.logs or ()
        if log.to in watched and not log.sweep and log.token in tokens
    ]
