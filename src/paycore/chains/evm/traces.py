"""Native coin sent by contracts (internal transfers), read from call traces.

A payment from an exchange's hot wallet contract, a multisig or a batch payout is a call
*inside* a transaction: the transaction is sent to the contract, and no log records the
coin that the contract passes on. Blocks and logs do not show it; only a trace of the
execution does. Nodes offer two kinds (``ChainConfig.internal_transfers``):

- ``debug``: ``debug_traceBlockByHash`` with the ``callTracer`` (geth, erigon, reth,
  anvil): per transaction, a tree of call frames. Asked by block hash, so the trace is of
  exactly the block the watcher fetched.
- ``trace``: ``trace_block`` (erigon, nethermind, reth, anvil; OpenEthereum's format): a flat
  list per block, each with its ``traceAddress`` (its path in the tree) and ``blockHash``,
  which must be the fetched block's.

Both are read into the same :class:`~paycore.chains.common.Transfer` records. What counts:
a frame below the top one (the top one is the transaction, which the block scan sees) that
moves value -- a ``CALL``, a ``SELFDESTRUCT`` (the balance goes to its beneficiary) or a
``CREATE`` -- to a watched address, that did not fail and is not inside a frame that failed
(a reverted frame takes its children's transfers back with it). A transfer into a wallet in
a transaction where that wallet logged ``Collected`` is the wallet sweeping its forwarder,
not a payment (as for tokens). Frames are numbered in call order among the value-moving
ones, the first being 1, and a transfer's ``logIndex`` is ``-1 - number`` (-2, -3, ...):
stable across re-scans, distinct from the plain transfer's -1, so each counts once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence, Set
from typing import Any

from paycore.chains.common import Transfer
from paycore.chains.watching import Inconsistent
from paycore.domain.tokens import NATIVE, to_checksum

from .rpc import Call

RawBlock = Mapping[str, Any]

#: Call kinds that move value to their target (DELEGATECALL, STATICCALL and CALLCODE do not).
_MOVES = frozenset({"CALL", "CREATE", "CREATE2", "SELFDESTRUCT"})


def calls(mode: str, blocks: Sequence[RawBlock]) -> tuple[list[RawBlock], list[Call]]:
    """The blocks worth tracing (those with transactions) and the calls that trace them."""
    busy = [b for b in blocks if b.get("transactions")]
    if mode == "debug":
        return busy, [
            ("debug_traceBlockByHash", [b["hash"], {"tracer": "callTracer"}]) for b in busy
        ]
    return busy, [("trace_block", [b["number"]]) for b in busy]


def _tx_hashes(block: RawBlock) -> list[str]:
    return [t if isinstance(t, str) else t["hash"] for t in block["transactions"]]


def match(
    mode: str,
    block: RawBlock,
    result: Any,
    watched: Mapping[str, str],
    sweeps: Set[tuple[str, str]] = frozenset(),
) -> list[Transfer]:
    """The internal transfers to watched addresses in one block's trace ``result``."""
    frames = _call_tracer(block, result) if mode == "debug" else _parity(block, result)
    number, block_hash = int(block["number"], 16), block["hash"]
    found: list[Transfer] = []
    for tx_hash, tx_index, position, source, target, value in frames:
        key = target[2:].lower()
        to = watched.get(key)
        if to is None or (tx_hash, key) in sweeps:
            continue
        found.append(
            Transfer(
                tx_hash=tx_hash,
                log_index=-1 - position,
                tx_index=tx_index,
                block_number=number,
                block_hash=block_hash,
                token=NATIVE,
                from_=to_checksum(source),
                to=to,
                units=value,
            )
        )
    return found


#: (tx hash, tx index, position among value-moving frames, from, to, value) of a frame that
#: moved value and did not fail.
_Frame = tuple[str, int, int, str, str, int]


def _call_tracer(block: RawBlock, result: Any) -> Iterator[_Frame]:
    hashes = _tx_hashes(block)
    if not isinstance(result, list) or len(result) != len(hashes):
        raise Inconsistent(f"the trace of block {int(block['number'], 16)} does not match it")
    for index, (tx_hash, entry) in enumerate(zip(hashes, result, strict=True)):
        if entry.get("txHash", tx_hash) != tx_hash:
            raise Inconsistent(f"the trace of {tx_hash} is another transaction's")
        top = entry.get("result")
        if not isinstance(top, Mapping):  # the tracer failed on it: cannot say, read again
            raise Inconsistent(f"tracing {tx_hash} failed: {str(entry.get('error'))[:100]}")
        position = 0
        stack: list[tuple[Mapping[str, Any], int, bool]] = [(top, 0, False)]
        while stack:  # depth first, in call order
            frame, depth, failed = stack.pop()
            failed = failed or bool(frame.get("error"))
            value = int(frame.get("value") or "0x0", 16)
            kind = str(frame.get("type", "")).upper()
            if depth and value and kind in _MOVES:
                position += 1
                target = frame.get("to")
                if not failed and target:
                    yield tx_hash, index, position, frame["from"], target, value
            for child in reversed(frame.get("calls") or ()):
                stack.append((child, depth + 1, failed))


def _parity(block: RawBlock, result: Any) -> Iterator[_Frame]:
    if not isinstance(result, list):
        raise Inconsistent(f"block {int(block['number'], 16)} has no trace yet")
    positions = {h: i for i, h in enumerate(_tx_hashes(block))}
    by_tx: dict[str, list[Mapping[str, Any]]] = {}
    for entry in result:
        if entry.get("type") == "reward" or entry.get("transactionHash") is None:
            continue
        if entry.get("blockHash") != block["hash"]:
            raise Inconsistent(f"the trace of block {int(block['number'], 16)} is of another")
        by_tx.setdefault(entry["transactionHash"], []).append(entry)
    if set(by_tx) != set(positions):
        raise Inconsistent(f"the trace of block {int(block['number'], 16)} does not match it")
    for tx_hash, entries in by_tx.items():
        failed: list[tuple[int, ...]] = []
        position = 0
        for entry in sorted(entries, key=lambda e: list(e.get("traceAddress") or [])):
            path = tuple(entry.get("traceAddress") or ())
            if entry.get("error"):
                failed.append(path)
            moved = _parity_move(entry)
            if not path or moved is None:
                continue
            position += 1
            if any(path[: len(f)] == f for f in failed):
                continue
            source, target, value = moved
            if target:
                yield tx_hash, positions[tx_hash], position, source, target, value


def _parity_move(entry: Mapping[str, Any]) -> tuple[str, str | None, int] | None:
    """(from, to, value) of a trace entry that moves value, else None."""
    action = entry.get("action") or {}
    kind = entry.get("type")
    if kind == "call" and action.get("callType") == "call":
        source, target, raw = action.get("from"), action.get("to"), action.get("value")
    elif kind == "create":
        source, raw = action.get("from"), action.get("value")
        target = (entry.get("result") or {}).get("address")
    elif kind == "suicide":
        source, target, raw = (
            action.get("address"),
            action.get("refundAddress"),
            action.get("balance"),
        )
    else:
        return None
    value = int(raw or "0x0", 16)
    return (str(source), target, value) if value else None
