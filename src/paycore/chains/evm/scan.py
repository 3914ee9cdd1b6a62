"""Pure matching of raw JSON-RPC logs and blocks against the watched deposit addresses.

The watched set is a dict from the 40 lowercase hex digits of an address to its checksummed
form, so each log costs one slice and one dict lookup, whatever the number of addresses:
matching cost grows with the logs in a range, not with the addresses watched. Only matches
are decoded further (amount, sender, checksum). No I/O here; ``watcher`` feeds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from functools import lru_cache
from typing import Any

from paycore.chains.common import Transfer as Transfer
from paycore.domain.tokens import NATIVE, to_checksum

from . import abi

RawLog = Mapping[str, Any]
RawBlock = Mapping[str, Any]

#: EIP-55 costs a keccak per address; token contracts and payers repeat across logs.
_checksum = lru_cache(maxsize=1 << 16)(to_checksum)


def watch_keys(addresses: Iterable[str]) -> dict[str, str]:
    """The lookup table the matchers take: lowercase hex digits -> checksummed address."""
    return {a[2:].lower(): a for a in addresses if a.startswith("0x") and len(a) == 42}


def sweep_keys(wallet_logs: Iterable[RawLog]) -> set[tuple[str, str]]:
    """(txHash, wallet digits) of every ``Collected`` event: in that transaction, a token
    transfer into that wallet is the wallet sweeping its own forwarder, not a payment."""
    return {
        (log["transactionHash"], log["address"][2:].lower())
        for log in wallet_logs
        if log["topics"] and log["topics"][0] == abi.COLLECTED_TOPIC
    }


def match_transfers(
    logs: Iterable[RawLog],
    watched: Mapping[str, str],
    sweeps: Set[tuple[str, str]] = frozenset(),
) -> list[Transfer]:
    """ERC20 ``Transfer`` logs whose recipient is watched. Logs with another shape (an
    ERC721 ``Transfer`` has a third indexed topic) are ignored."""
    found: list[Transfer] = []
    for log in logs:
        topics = log["topics"]
        if len(topics) != 3:
            continue
        to_key = topics[2][-40:]
        to = watched.get(to_key)
        if to is None or (log["transactionHash"], to_key) in sweeps:
            continue
        if topics[0] != abi.TRANSFER_TOPIC or len(log["data"]) != 66:
            continue
        found.append(
            Transfer(
                tx_hash=log["transactionHash"],
                log_index=int(log["logIndex"], 16),
                tx_index=int(log["transactionIndex"], 16),
                block_number=int(log["blockNumber"], 16),
                block_hash=log["blockHash"],
                token=_checksum(log["address"]),
                from_=_checksum("0x" + topics[1][-40:]),
                to=to,
                units=abi.word_int(log["data"]),
            )
        )
    return found


def match_native(blocks: Iterable[RawBlock], watched: Mapping[str, str]) -> list[Transfer]:
    """Plain value transfers (empty input) to watched addresses in full blocks.

    A first payment to a deposit address finds no code there, so it is a plain transfer,
    and so is one to a deployed forwarder or wallet (their ``receive``). A call that carries
    data -- the owner's own ``withdraw`` paying its fee into the wallet, say -- is not a
    payment. Success is for the caller to check (receipts): a plain transfer to a contract
    can still revert.
    """
    found: list[Transfer] = []
    for block in blocks:
        number = int(block["number"], 16)
        for tx in block["transactions"]:
            to_raw = tx.get("to")
            if not to_raw:
                continue
            to = watched.get(to_raw[2:].lower())
            if to is None or tx.get("input", "0x") not in ("0x", ""):
                continue
            units = int(tx["value"], 16)
            if units == 0:
                continue
            found.append(
                Transfer(
                    tx_hash=tx["hash"],
                    log_index=-1,
                    tx_index=int(tx["transactionIndex"], 16),
                    block_number=number,
                    block_hash=block["hash"],
                    token=NATIVE,
                    from_=_checksum(tx["from"]),
                    to=to,
                    units=units,
                )
            )
    return found
