"""The deposit watcher of one Tron chain (docs/architecture.md §Chains), shaped like the EVM one.

One pass (:meth:`TronWatcher.step`):

1. Claim (or renew) the chain's lease in storage; another live holder means another process
   scans this chain. The same row holds the cursor: the last block scanned and its blockID.
2. Read the head (``getnowblock``); only blocks at least ``confirmations`` deep are scanned.
3. Load the watched addresses from storage -- after reading the head, so an invoice created
   later cannot have been paid in a block this pass scans.
4. For each range of ``block_batch`` blocks up to the safe head: fetch the blocks with
   ``getblockbylimitnext`` (100 per request). The first block's ``parentHash`` must be the
   cursor's blockID: if it is not, the chain was replaced below the cursor (a fork deeper
   than ``confirmations``): the deposits recorded in replaced blocks are taken back out of
   their invoices (``ChainWatcher._rewind``), and the cursor rewinds ``reorg_rewind``
   blocks, or below the lowest replaced deposit. Within the range
   each block must name the previous one as parent. TRX deposits are ``TransferContract``
   transactions in the blocks; TRC20 deposits are ``Transfer`` logs, read per block with
   ``gettransactioninfobyblocknum`` -- only for blocks that hold a contract call, the only
   transactions that can log -- and those infos must belong to the block just read (same
   transaction ids), or the range is dropped and read again on the next pass.
5. Matches are attributed in chain order through ``Gateway.ingest``, up to
   ``Settings.ingest_batch`` deposits per storage transaction, idempotent on (chain, txID,
   log index, token); ``Withdrawn`` events of genuine paycore wallets become withdraw
   transactions. The range's last batch moves the cursor to its last block, in the
   statement that proves the lease is still ours. A deposit with no fresh price holds the
   range (the batches before it stay committed, the cursor stays) until the refresher has
   stored one, since a deposit valued wrongly cannot be taken back. A watcher killed
   mid-range leaves the cursor where it was, and its successor's re-scan counts nothing
   twice.

Why the full-node API and not TronGrid's ``/v1/contracts/{address}/events``: it is served by
every java-tron node (one's own, TronGrid, other providers), and logs come per block, so the
block whose ID is checked is the block whose logs are attributed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from paycore.chains.watching import (
    ChainWatcher,
    FetchedRange,
    Forked,
    Inconsistent,
    StepReport,
    run_all,
)
from paycore.domain.records import Transaction
from paycore.domain.tokens import NATIVE

from . import scan
from .address import to_evm
from .chain import TronChain

if TYPE_CHECKING:
    from paycore.gateway import Gateway

log = logging.getLogger("paycore.watcher")

#: The most blocks ``getblockbylimitnext`` returns for one request.
BLOCKS_PER_REQUEST = 100

__all__ = ["BLOCKS_PER_REQUEST", "StepReport", "TronWatcher", "run_watchers"]


#: A fetched and checked block range; its withdrawals are decoded ``Withdrawn`` events.
_Range = FetchedRange[scan.Withdrawal]

#: The node's answers disagree (the chain moved mid-read): retry the range later.
_Inconsistent = Inconsistent

#: The block after the cursor does not descend from the cursor's block.
_Forked = Forked


class TronWatcher(ChainWatcher[TronChain]):
    """Scans one Tron chain through the full-node HTTP API; the lease, cursor and loop are
    ``ChainWatcher``'s."""

    _replaced = "fork"

    # -- one pass -------------------------------------------------------------------------
    def _head(self) -> int:
        return scan.number(self.chain.node.post("wallet/getnowblock"))

    def _block_hash(self, number: int) -> str:
        return scan.block_id(self._block(number))

    def _block_times(self, numbers: Sequence[int]) -> dict[int, int]:
        return {n: scan.timestamp(self._block(n)) for n in numbers}

    def _scan(
        self, last: int, last_hash: str | None, safe: int, stop: threading.Event | None
    ) -> StepReport:
        """Fetch and attribute range after range up to ``safe``; the first range's parent
        must be the cursor's block, or the cursor rewinds once this pass. A deposit with no
        fresh price holds the chain: the range is read again on a later pass."""
        watched = scan.watch_keys(self._watched_addresses())
        decimals = self._token_decimals()
        tokens = {scan.key(t): t for t in decimals if t != NATIVE}
        report = StepReport(held=True, scanned_from=last + 1)
        # No parking on Tron: a deposit with no fresh price holds its range (waiting None).
        return self._ranges(
            report,
            last,
            last_hash,
            safe,
            stop,
            lambda start, end, parent: self._fetch(start, end, parent, watched, tokens),
            decimals,
            None,
        )

    def _block(self, number: int) -> dict[str, Any]:
        block: dict[str, Any] = self.chain.node.post("wallet/getblockbynum", {"num": number})
        if not block or "blockID" not in block:
            raise _Inconsistent(f"block {number} is missing")
        return block

    # -- fetching -------------------------------------------------------------------------
    def _blocks(self, start: int, end: int) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        for first in range(start, end + 1, BLOCKS_PER_REQUEST):
            stop = min(first + BLOCKS_PER_REQUEST, end + 1)  # endNum is exclusive
            answer = self.chain.node.post(
                "wallet/getblockbylimitnext", {"startNum": first, "endNum": stop}
            )
            got = sorted(answer.get("block") or [], key=scan.number)
            if [scan.number(b) for b in got] != list(range(first, stop)):
                raise _Inconsistent(f"blocks {first}..{stop - 1} are not all available")
            blocks.extend(got)
        return blocks

    def _fetch(
        self,
        start: int,
        end: int,
        parent: str | None,
        watched: dict[str, str],
        tokens: dict[str, str],
    ) -> _Range:
        blocks = self._blocks(start, end)
        if parent is not None and scan.parent_id(blocks[0]) != parent:
            raise _Forked()
        for before, block in zip(blocks, blocks[1:], strict=False):
            if scan.parent_id(block) != scan.block_id(before):
                raise _Inconsistent(f"block {scan.number(block)} changed while reading")
        transfers: list[scan.Transfer] = []
        withdrawals: list[scan.Withdrawal] = []
        for block in blocks:
            if self.config.scan_native:
                transfers += scan.match_trx(block, watched)
            if not scan.contract_calls(block):
                continue
            infos = self._infos(block)
            transfers += scan.match_trc20(block, infos, watched, tokens)
            withdrawals += scan.withdrawals(block, infos)
        transfers.sort(key=lambda t: t.order)
        timestamps = {scan.number(b): scan.timestamp(b) for b in blocks}
        return FetchedRange(scan.block_id(blocks[-1]), transfers, timestamps, withdrawals)

    def _infos(self, block: dict[str, Any]) -> list[dict[str, Any]]:
        answer = self.chain.node.post(
            "wallet/gettransactioninfobyblocknum", {"num": scan.number(block)}
        )
        infos = answer if isinstance(answer, list) else []
        if not scan.infos_fit(block, infos):
            raise _Inconsistent(f"transaction infos of block {scan.number(block)} do not fit it")
        return infos

    # -- recording ------------------------------------------------------------------------
    def _withdrawal_records(self, fetched: _Range) -> list[Transaction]:
        """``Withdrawn`` events of genuine paycore wallets, as withdraw transactions."""
        if not fetched.withdrawals:
            return []
        owners = self._owners_of({w.emitter for w in fetched.withdrawals})
        records: list[Transaction] = []
        for event in fetched.withdrawals:
            owner = owners.get(event.emitter)
            if owner is None:
                continue
            record = self._withdrawal(
                tx_hash=event.tx_hash,
                log_index=event.log_index,
                token=NATIVE if int(event.token, 16) == 0 else scan.base58(event.token),
                units=event.units,
                owner=owner,
                to=scan.base58(event.to),
                timestamp=fetched.timestamps[event.block_number],
                prices=self.gateway.prices,
            )
            if record is not None:
                records.append(record)
        return records

    def _owners_of(self, emitters: set[str]) -> dict[str, str | None]:
        """Which emitters (hex digits) are paycore wallets of this factory, and whose:
        ``owner()`` is asked on chain, then the wallet's CREATE2 address is recomputed from
        it, which no other contract can match. Answers are kept (an owner never changes)."""
        for emitter in sorted(emitters - self._wallet_owners.keys()):
            owner = None
            # A node in trouble raises (the pass is retried): only an answer that no
            # wallet is there -- no contract, or a failing owner() -- is kept as None.
            result = self.chain.call(scan.base58(emitter), "owner()")
            if not result.reverted and len(result.output) == 64:
                candidate = scan.base58(result.output)
                if scan.key(self.chain.wallet_of(candidate)) == emitter:
                    owner = self._owner_spelling(candidate)
            self._wallet_owners[emitter] = owner
        return {e: self._wallet_owners[e] for e in emitters}

    def _owner_spelling(self, owner: str) -> str:
        """The owner as its invoices name it: the same key may be a merchant's 0x address
        (an EVM wallet taking Tron payments) or its base58 form."""
        evm = to_evm(owner)
        _items, total = self.gateway.chain_ledger.invoices_of(evm, self.chain.chain_id, limit=1)
        return evm if total else owner


def run_watchers(gateway: Gateway, chains: list[TronChain], stop_event: threading.Event) -> None:
    """Run each chain's watcher on its own thread until ``stop_event`` is set; blocks."""
    run_all([TronWatcher(gateway, chain) for chain in chains], stop_event)
