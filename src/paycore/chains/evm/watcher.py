"""The deposit watcher of one EVM chain (docs/architecture.md §Chains).

One pass (:meth:`EvmWatcher.step`):

1. Claim (or renew) the chain's lease in storage. Another live holder means another process
   is scanning this chain: do nothing. The same row holds the cursor: the last block scanned
   and its hash.
2. Read the head; only blocks at least ``confirmations`` deep are scanned ("safe").
3. Re-check the cursor block's hash, with the head, in one request (so of one node). A
   node behind the highest head seen, or without the cursor's block, is not believed (it
   lags behind a load balancer): the pass ends. A different hash from a node that is not
   behind means the chain reorganised below the
   cursor (deeper than ``confirmations``): the deposits recorded in replaced blocks are
   taken back out of their invoices (``ChainWatcher._rewind``), and the cursor rewinds
   ``reorg_rewind`` blocks, or below the lowest replaced deposit, to scan again.
   Attribution is idempotent on (chain, txHash, logIndex, token), so a re-scan counts
   nothing twice; what it adds are the replacement chain's transfers, including a taken
   back one that the new chain mined again.
4. Load the watched addresses from storage -- after reading the head, so an invoice created
   later cannot have been paid in a block this pass scans.
5. For each range of ``block_batch`` blocks up to the safe head: one JSON-RPC batch fetches
   the blocks (full, when native coin is scanned); then ``logs.LogReader`` fetches the
   ``Transfer`` logs of the watched token contracts and the ``Withdrawn``/``Collected`` logs
   of any contract, in pieces the provider accepts, each batch with the range's last
   header to prove the answering node has the range; with ``internal_transfers`` set, the
   blocks' call traces (``traces``). Logs, receipts or traces whose block hash disagrees
   with the blocks fetched mean the chain moved mid-read, or a node that lags answered:
   the read is asked again, then the range is dropped and retried on the next pass, never
   attributed half-old, half-new (docs/chains.md).
6. Matches are attributed in chain order through ``Gateway.ingest``, a batch of up to
   ``Settings.ingest_batch`` deposits per storage transaction: the invoices of the batch's
   addresses are read (and locked) at once, and the rows, invoice updates and events are
   written at once. One that has no fresh price is parked, in the same transaction,
   instead of holding the chain (so is any later deposit to the same address, to keep that
   address in order); each pass first retries the parked ones, dropping those a reorg
   removed (``paycore.prices.parking``). ``Withdrawn`` events of genuine paycore wallets
   are recorded as withdraw transactions. The range's last batch also moves the cursor to
   its last block -- in the statement that proves the lease is still ours, so a watcher
   that lost its lease commits nothing. A watcher killed mid-range leaves the cursor where
   it was; its successor re-scans the range and the idempotent attribution makes every
   deposit count exactly once.

``EvmWatcher.run`` loops over passes until told to stop; :func:`run_watchers` runs one per
configured chain on threads (``paycore watcher`` as a process: ``paycore.runtime.watcher``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from paycore.chains.watching import (
    ChainWatcher,
    FetchedRange,
    Inconsistent,
    StepReport,
    asked_again,
    default_holder,
    run_all,
)
from paycore.domain.records import Deposit, Transaction
from paycore.domain.tokens import NATIVE
from paycore.prices import parking

from . import abi, limits, scan, traces
from .chain import EvmChain
from .rpc import RpcError, execution_failure

if TYPE_CHECKING:
    from paycore.chains.host import ChainHost

log = logging.getLogger("paycore.watcher")

__all__ = ["EvmWatcher", "StepReport", "default_holder", "run_watchers", "watchers"]


#: A fetched and checked block range; its withdrawals are raw ``Withdrawn`` logs.
_Range = FetchedRange[scan.RawLog]

#: The node's answers within one batch disagree (a reorg mid-read): retry the range.
_Inconsistent = Inconsistent


class EvmWatcher(ChainWatcher[EvmChain]):
    """Scans one EVM chain with JSON-RPC batches; the lease, cursor and loop are
    ``ChainWatcher``'s."""

    #: One JSON-RPC batch of headers per round of the first pass's search.
    _probes = 15

    def __init__(self, gateway: ChainHost, chain: EvmChain, *, holder: str | None = None) -> None:
        super().__init__(gateway, chain, holder=holder)
        #: The unconfirmed blocks read by the last pass, by hash: their matched transfers
        #: and time; valid for the watched set they were matched against (``_head_scope``).
        self._head_blocks: dict[str, tuple[list[scan.Transfer], int]] = {}
        self._head_scope: tuple[frozenset[str], frozenset[tuple[str, int]]] | None = None

    # -- one pass -------------------------------------------------------------------------
    def _head(self) -> int:
        return int(self.chain.rpc.call("eth_blockNumber"), 16)

    def _block_times(self, numbers: Sequence[int]) -> dict[int, int]:
        return {n: int(h["timestamp"], 16) for n, h in self._headers(numbers).items()}

    def _headers(self, numbers: Sequence[int]) -> dict[int, dict[str, Any]]:
        """The header of each block, from a node that has them all (asked again if not)."""

        def ask() -> dict[int, dict[str, Any]]:
            calls = [("eth_getBlockByNumber", [hex(n), False]) for n in numbers]
            headers = self.chain.rpc.batch(calls)
            for number, header in zip(numbers, headers, strict=True):
                if header is None:
                    raise _Inconsistent(f"block {number} is missing")
            return dict(zip(numbers, headers, strict=True))

        return asked_again(ask)

    def _node_trouble(self, exc: Exception) -> float | None:
        if not isinstance(exc, RpcError):
            return None
        return max(exc.retry_in or 0.0, self.chain.rpc.available_in())

    def _block_hash(self, number: int) -> str:
        block_hash: str = self._header(number)["hash"]
        return block_hash

    def _block_hashes(self, numbers: Sequence[int]) -> dict[int, str | None]:
        """One batch of headers (re-checking recorded deposits after a reorg)."""
        headers = self.chain.rpc.batch([("eth_getBlockByNumber", [hex(n), False]) for n in numbers])
        return {n: (h or {}).get("hash") for n, h in zip(numbers, headers, strict=True)}

    def _scan(
        self, last: int, last_hash: str | None, safe: int, stop: threading.Event | None
    ) -> StepReport:
        """Re-check the cursor block's hash (rewinding after a reorg below it), retry the
        parked deposits, then fetch and attribute range after range up to ``safe``."""
        rewound_to = None
        if last_hash is not None and last >= 0 and self._replaced_cursor(last, last_hash):
            rewound_to, _ = self._rewind(last)
            last = rewound_to
        watched = scan.watch_keys(self._watched_addresses())
        tokens = self._token_decimals()
        unparked, waiting = self._retry_parked()
        report = StepReport(
            held=True, scanned_from=last + 1, rewound_to=rewound_to, deposits=unparked
        )
        # The cursor's hash was checked above, so ``fetch`` needs no parent.
        return self._ranges(
            report,
            last,
            last_hash,
            safe,
            stop,
            lambda start, end, _parent: self._fetch(start, end, watched, tokens),
            tokens,
            waiting,
        )

    def _unconfirmed(
        self, start: int, end: int
    ) -> tuple[list[scan.Transfer], dict[str, int], dict[int, int]]:
        """The unconfirmed blocks, each read as a range is (``_fetch``: logs, the full block
        for native coin, traces) once per block hash: a pass asks for the headers of the
        whole range in one batch, checks they make one chain, and reads only the blocks it
        has not read before with that hash and the same watched set -- usually the one mined
        since the last pass. A reorg changes the hashes, so a replaced block is read
        again and a dropped transfer is gone."""
        watched = scan.watch_keys(self._watched_addresses())
        tokens = self._token_decimals()
        if not watched:
            return [], tokens, {}
        numbers = list(range(start, end + 1))
        headers = self._headers(numbers)
        for number in numbers[1:]:
            if headers[number]["parentHash"] != headers[number - 1]["hash"]:
                raise _Inconsistent(f"block {number} changed while reading the unconfirmed ones")
        scope = (frozenset(watched), frozenset(tokens.items()))
        if scope != self._head_scope:
            self._head_blocks = {}
            self._head_scope = scope
        kept: dict[str, tuple[list[scan.Transfer], int]] = {}
        transfers: list[scan.Transfer] = []
        timestamps: dict[int, int] = {}
        for number in numbers:
            block_hash = headers[number]["hash"]
            found = self._head_blocks.get(block_hash)
            if found is None:
                fetched = asked_again(partial(self._fetch, number, number, watched, tokens))
                if fetched.end_hash != block_hash:
                    raise _Inconsistent(f"block {number} changed while reading it")
                found = (fetched.transfers, int(headers[number]["timestamp"], 16))
            kept[block_hash] = found
            transfers += found[0]
            timestamps[number] = found[1]
        self._head_blocks = kept
        return transfers, tokens, timestamps

    def _replaced_cursor(self, last: int, last_hash: str) -> bool:
        """Whether the cursor's block was replaced. The head and the block are asked in
        one request, so of one node; a node that answers an older head than one seen
        before, or no block at the cursor, is behind (or on a stale fork): its word is not
        taken, the pass ends, and a later one asks again (:class:`Inconsistent`)."""

        def ask() -> bool:
            answers = self.chain.rpc.batch(
                [("eth_blockNumber", []), ("eth_getBlockByNumber", [hex(last), False])]
            )
            head, header = int(answers[0], 16), answers[1]
            if header is None or head < self._seen_head:
                raise _Inconsistent(f"the node at block {head} is behind (seen {self._seen_head})")
            return bool(header["hash"] != last_hash)

        return asked_again(ask)

    def _retry_parked(self) -> tuple[int, set[str]]:
        """Value the parked deposits that now have a fresh price (dropping any a reorg
        removed); returns how many were valued and the addresses that still wait."""
        retried = parking.retry_parked(self.gateway, self.chain.chain_id, self._still_there)
        return retried.valued, parking.parked_addresses(self.gateway, self.chain.chain_id)

    def _still_there(self, deposits: list[Deposit]) -> set[Deposit]:
        """The deposits whose block is still the canonical one at its height."""
        # A block missing is a node that lags, no proof they are gone: the pass waits.
        headers = self._headers(sorted({d.block_number for d in deposits}))
        return {d for d in deposits if headers[d.block_number]["hash"] == d.block_hash}

    def _header(self, number: int) -> dict[str, Any]:
        header: dict[str, Any] | None = self.chain.rpc.call(
            "eth_getBlockByNumber", [hex(number), False]
        )
        if header is None:
            raise _Inconsistent(f"block {number} is missing")
        return header

    # -- fetching -------------------------------------------------------------------------
    def _fetch(
        self, start: int, end: int, watched: dict[str, str], tokens: dict[str, int]
    ) -> _Range:
        native = self.config.scan_native
        traced = self.config.internal_transfers != "off"
        numbers = range(start, end + 1) if native or traced else range(end, end + 1)

        def ask_blocks() -> list[scan.RawBlock]:
            calls = [("eth_getBlockByNumber", [hex(n), native]) for n in numbers]
            blocks: list[scan.RawBlock] = self.chain.rpc.batch(calls)
            if any(b is None for b in blocks):
                raise _Inconsistent(f"a block in {start}..{end} is not available yet")
            return blocks

        blocks = asked_again(ask_blocks)
        hashes = {int(b["number"], 16): b["hash"] for b in blocks}
        timestamps = {int(b["number"], 16): int(b["timestamp"], 16) for b in blocks}
        erc20 = [t for t in tokens if t != NATIVE]
        filters: list[dict[str, Any]] = [{"topics": [[abi.WITHDRAWN_TOPIC, abi.COLLECTED_TOPIC]]}]
        if erc20:
            filters.append({"address": erc20, "topics": [abi.TRANSFER_TOPIC]})
        found = self.chain.logs.read(start, end, filters, hashes[end])
        wallet_logs: list[scan.RawLog] = found[0]
        token_logs: list[scan.RawLog] = found[1] if erc20 else []
        for entry in (*wallet_logs, *token_logs):
            number = int(entry["blockNumber"], 16)
            if entry.get("removed") or hashes.get(number, entry["blockHash"]) != entry["blockHash"]:
                raise _Inconsistent(f"logs of block {number} changed while reading")
        sweeps = scan.sweep_keys(wallet_logs)
        transfers = scan.match_transfers(token_logs, watched, sweeps)
        if native:
            transfers += self._succeeded(scan.match_native(blocks, watched))
        if traced:
            transfers += self._internal(blocks, watched, sweeps)
        transfers.sort(key=lambda t: t.order)
        withdrawals = [w for w in wallet_logs if w["topics"][0] == abi.WITHDRAWN_TOPIC]
        missing = {t.block_number for t in transfers} | {
            int(w["blockNumber"], 16) for w in withdrawals
        }
        self._fill_timestamps(missing - timestamps.keys(), timestamps)
        return FetchedRange(hashes[end], transfers, timestamps, withdrawals)

    def _succeeded(self, transfers: list[scan.Transfer]) -> list[scan.Transfer]:
        """Native transfers whose transaction did not revert (one batch of receipts). A
        receipt missing, or of another block, means a node that lags or is on another
        fork answered: the range is read again, never attributed without it."""
        if not transfers:
            return []

        def ask() -> list[Any]:
            calls = [("eth_getTransactionReceipt", [t.tx_hash]) for t in transfers]
            receipts: list[Any] = self.chain.rpc.batch(calls)
            for t, receipt in zip(transfers, receipts, strict=True):
                if receipt is None or receipt.get("blockHash") != t.block_hash:
                    raise _Inconsistent(f"no receipt of {t.tx_hash} in block {t.block_number}")
            return receipts

        receipts = asked_again(ask)
        return [
            t
            for t, receipt in zip(transfers, receipts, strict=True)
            if receipt.get("status") == "0x1"
        ]

    def _internal(
        self,
        blocks: list[scan.RawBlock],
        watched: dict[str, str],
        sweeps: set[tuple[str, str]],
    ) -> list[scan.Transfer]:
        """Native coin that contracts sent to watched addresses, from the blocks' call
        traces (``traces``); a node that cannot trace a block fails the pass."""
        mode = self.config.internal_transfers
        busy, calls = traces.calls(mode, blocks)

        def ask() -> list[scan.Transfer]:
            found: list[scan.Transfer] = []
            for block, outcome in zip(busy, self.chain.rpc.batch_outcomes(calls), strict=True):
                if isinstance(outcome, RpcError):
                    if "not found" in limits.message(outcome.detail).lower():
                        raise _Inconsistent(f"block {int(block['number'], 16)} is not traced yet")
                    raise outcome
                found += traces.match(mode, block, outcome, watched, sweeps)
            return found

        return asked_again(ask)

    def _fill_timestamps(self, numbers: set[int], timestamps: dict[int, int]) -> None:
        if not numbers:
            return
        timestamps.update(self._block_times(sorted(numbers)))

    # -- recording ------------------------------------------------------------------------
    def _withdrawal_records(self, fetched: _Range) -> list[Transaction]:
        """``Withdrawn`` events of genuine paycore wallets, as withdraw transactions."""
        if not fetched.withdrawals:
            return []
        owners = self._owners_of({w["address"] for w in fetched.withdrawals})
        table = self.gateway.prices
        records: list[Transaction] = []
        for entry in fetched.withdrawals:
            owner = owners.get(entry["address"].lower())
            if owner is None or len(entry["topics"]) != 3:
                continue
            record = self._withdrawal(
                tx_hash=entry["transactionHash"],
                log_index=int(entry["logIndex"], 16),
                token=abi.topic_address(entry["topics"][1]),
                units=abi.word_int(entry["data"], 0),
                owner=owner,
                to=abi.topic_address(entry["topics"][2]),
                timestamp=fetched.timestamps[int(entry["blockNumber"], 16)],
                prices=table,
            )
            if record is not None:
                records.append(record)
        return records

    def _owners_of(self, emitters: set[str]) -> dict[str, str | None]:
        """Which emitters are paycore wallets of this factory, and whose: ``owner()`` is
        asked on chain, then the wallet's CREATE2 address is recomputed from it, which no
        other contract can match. Answers are kept: a wallet's owner never changes."""
        unknown = sorted(e.lower() for e in emitters if e.lower() not in self._wallet_owners)
        if unknown:
            outcomes = self.chain.rpc.batch_outcomes(
                [
                    ("eth_call", [{"to": e, "data": abi.view_data("owner()")}, "latest"])
                    for e in unknown
                ]
            )
            for emitter, outcome in zip(unknown, outcomes, strict=True):
                if outcome in (None, "0x", "") or (
                    isinstance(outcome, RpcError) and execution_failure(outcome) is None
                ):
                    continue  # no code there on this node, or no answer: ask again later
                owner = None
                if isinstance(outcome, str) and len(outcome) == 66:
                    candidate = abi.topic_address(outcome)
                    if self.chain.wallet_of(candidate).lower() == emitter:
                        owner = candidate
                self._wallet_owners[emitter] = owner
        return {e.lower(): self._wallet_owners.get(e.lower()) for e in emitters}


def watchers(gateway: ChainHost, holder: str | None = None) -> list[EvmWatcher]:
    """One watcher per EVM chain the gateway's backends serve."""
    from .backend import EvmBackend

    found: dict[int, EvmWatcher] = {}
    for backend in gateway.chains.values():
        if isinstance(backend, EvmBackend):
            for chain_id, chain in backend.chains.items():
                found.setdefault(chain_id, EvmWatcher(gateway, chain, holder=holder))
    return list(found.values())


def run_watchers(gateway: ChainHost, stop_event: threading.Event) -> None:
    """Run every chain's watcher on its own thread until ``stop_event`` is set; blocks."""
    run_all(watchers(gateway), stop_event)


if __name__ == "__main__":
    # ``python -m paycore.chains.evm.watcher``: the ``paycore watcher`` command, kept for
    # those who start it so. Only as a program: the chains never import the command line.
    import sys

    from paycore.runtime.cli import main as paycore

    raise SystemExit(paycore(["watcher", *sys.argv[1:]]))
