"""``Payouts``: create a batch (check rows, build the unsigned transactions, store), read it,
and confirm it from the chain.

Nothing here signs or sends: the merchant signs the transactions ``create`` answers with
and broadcasts them, then hands the hashes to ``confirm``. A hash is accepted for a batch
only when the mined transaction was sent by the batch's owner to its contract with exactly
the calldata of one of its calls -- so a hash of anything else settles nothing -- and its
receipt decides the state of every row of that call (the contract pays all rows or none).
Each row settled emits its own ``payout.confirmed`` or ``payout.failed`` event in the same
storage transaction; a repeated confirm finds no pending row and emits nothing.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import attrs

from ..config import Settings
from ..domain.records import Json, NewEvent
from ..domain.tokens import normalize_owner
from ..errors import InvalidInput, NotFound
from ..storage.contract import Storage, StorageTx
from ..webhooks.dispatcher import enqueue_webhooks
from .backend import BuiltPayouts, PayoutBackend
from .records import PAYOUT_CONFIRMED, PAYOUT_FAILED, Payout, PayoutBatch, PayoutStatus
from .rows import PayoutRow, check_rows, unread_tokens

log = logging.getLogger("paycore.payouts")

#: Transaction hashes one confirm may name.
MAX_HASHES = 50


@attrs.frozen
class CreatedBatch:
    batch: PayoutBatch
    payouts: tuple[Payout, ...]
    built: BuiltPayouts

    def to_wire(self) -> Json:
        return {
            "batch": self.batch.to_wire(),
            "approvals": list(self.built.approvals),
            "transactions": [c.transaction for c in self.built.calls],
            "payouts": [p.to_wire() for p in self.payouts],
        }


def batch_wire(batch: PayoutBatch, payouts: Sequence[Payout]) -> Json:
    counts = {s.value: 0 for s in PayoutStatus}
    for p in payouts:
        counts[p.status.value] += 1
    return {
        "batch": {**batch.to_wire(), "counts": counts},
        "payouts": [p.to_wire() for p in payouts],
    }


def _tx_hash(raw: object, field: str) -> str:
    text = raw if isinstance(raw, str) else ""
    body = text.removeprefix("0x").lower()
    if len(body) != 64 or any(c not in "0123456789abcdef" for c in body):
        raise InvalidInput(field, "must be a 32-byte transaction hash, 0x hex")
    return "0x" + body


class Payouts:
    """Batch payouts over ``storage``, with the chains' backends (``chains``: chain id ->
    backend, the Gateway's own dict) and a clock in unix seconds."""

    def __init__(
        self,
        storage: Storage,
        settings: Settings,
        chains: Mapping[int, object],
        now: Callable[[], int],
    ) -> None:
        self._storage = storage
        self.settings = settings
        self.chains = chains
        self.now = now

    def _backend(self, chain_id: int) -> tuple[PayoutBackend, str]:
        config = self.settings.chain(chain_id)
        backend = self.chains.get(chain_id)
        if not isinstance(backend, PayoutBackend):
            raise InvalidInput("chainId", f"no chain backend builds batch payouts on {chain_id}")
        if config.batch_pay is None:
            raise InvalidInput(
                "chainId", f"no batch payout contract is configured on chain {chain_id}"
            )
        return backend, config.batch_pay

    def check(
        self, chain_id: int, numbered: Sequence[tuple[int, Mapping[str, object]]]
    ) -> list[PayoutRow]:
        """``rows.check_rows`` with the decimals and symbols of the chain's configured tokens
        that only the chain knows, read first (one batch of calls, none when all are known,
        and cached by the chain for good: a deployed token's decimals never change)."""
        backend, _contract = self._backend(chain_id)
        unread = unread_tokens(self.settings, chain_id)
        read = backend.token_facts(chain_id, unread) if unread else {}
        return check_rows(self.settings, chain_id, numbered, read)

    def create(self, owner: str, chain_id: int, rows: Sequence[PayoutRow]) -> CreatedBatch:
        """Build and store a batch paying ``rows`` (already checked by ``rows.check_rows``)."""
        owner = normalize_owner(owner)
        backend, contract = self._backend(chain_id)
        ref = secrets.token_bytes(16)
        built = backend.build_payouts(chain_id, owner, contract, ref, rows)
        now = self.now()
        batch = PayoutBatch(
            id=ref.hex(),
            owner=owner,
            chain_id=chain_id,
            contract=contract,
            calls=tuple(c.data_hash for c in built.calls),
            created_at=now,
        )
        payouts = tuple(
            Payout(
                batch_id=batch.id,
                line=row.line,
                to=row.to,
                token=row.token,
                amount=row.amount,
                value=row.value,
                reference=row.reference,
                call=index,
                updated_at=now,
            )
            for index, call in enumerate(built.calls)
            for row in call.rows
        )
        with self._storage.transaction() as tx:
            tx.insert_payout_batch(batch, payouts)
        return CreatedBatch(batch, payouts, built)

    def get(self, owner: str, batch_id: str) -> tuple[PayoutBatch, list[Payout]]:
        """The batch and its rows; 404 for a batch that is not ``owner``'s (as for none)."""
        with self._storage.transaction() as tx:
            batch = tx.get_payout_batch(batch_id)
            if batch is None or batch.owner != owner:
                raise NotFound(f"payout batch {batch_id} not found")
            return batch, tx.payouts_of(batch_id)

    def confirm(
        self, owner: str, batch_id: str, tx_hashes: Sequence[object]
    ) -> tuple[PayoutBatch, list[Payout], list[Json]]:
        """Settle the calls ``tx_hashes`` carried. Per hash the answer says what was found:
        ``mined`` (the call's rows settled now or before), ``pending`` (not mined yet: the
        hash is kept, and the worker's payout pass settles its rows once it is mined; asking
        again does it sooner) -- or a 400 for a hash that is not one of this batch's calls."""
        if not tx_hashes or len(tx_hashes) > MAX_HASHES:
            raise InvalidInput("txHashes", f"give 1 to {MAX_HASHES} transaction hashes")
        hashes = [_tx_hash(h, f"txHashes[{i}]") for i, h in enumerate(tx_hashes)]
        batch, _rows = self.get(owner, batch_id)
        backend, _contract = self._backend(batch.chain_id)
        found: list[tuple[int, bool] | None] = []
        for i, tx_hash in enumerate(hashes):
            item = self._read(backend, batch, tx_hash)
            if item is False:
                raise InvalidInput(
                    f"txHashes[{i}]", f"{tx_hash} is not a transaction of batch {batch_id}"
                )
            found.append(item)
        with self._storage.transaction() as tx:
            answers = self._settle(tx, batch, hashes, found)
            rows = tx.payouts_of(batch_id)
        return batch, rows, answers

    def settle_watched(self, limit: int = 200) -> int:
        """The worker's payout pass: read again each hash a confirm was given before it was
        mined, and settle the rows of those now mined exactly as ``confirm`` does (same
        rules, same events, once). A hash that turns out not to be the batch's is dropped.
        Returns the number of hashes done with (mined or dropped)."""
        done = 0
        with self._storage.transaction() as tx:
            watched = tx.watched_payout_hashes(limit)
        for batch_id, tx_hash in watched:
            with self._storage.transaction() as tx:
                batch = tx.get_payout_batch(batch_id)
            if batch is None:
                item: tuple[int, bool] | Literal[False] | None = False
            else:
                try:
                    backend, _contract = self._backend(batch.chain_id)
                except InvalidInput:
                    continue  # the chain is not served here now: keep the hash
                item = self._read(backend, batch, tx_hash)
            if item is None:
                continue
            with self._storage.transaction() as tx:
                if item is False or batch is None:
                    log.warning("payout batch %s: %s is not its transaction", batch_id, tx_hash)
                    tx.unwatch_payout_hash(batch_id, tx_hash)
                else:
                    self._settle(tx, batch, [tx_hash], [item])
            done += 1
        return done

    @staticmethod
    def _read(
        backend: PayoutBackend, batch: PayoutBatch, tx_hash: str
    ) -> tuple[int, bool] | Literal[False] | None:
        """(call index, success) for a mined transaction of ``batch``; None while it is not
        mined; False for a mined transaction that is not one of the batch's calls."""
        mined = backend.mined_call(batch.chain_id, tx_hash)
        if mined is None:
            return None
        if (
            mined.sender != batch.owner
            or mined.to != batch.contract
            or mined.data_hash not in batch.calls
        ):
            return False
        return batch.calls.index(mined.data_hash), mined.success

    def _settle(
        self,
        tx: StorageTx,
        batch: PayoutBatch,
        hashes: Sequence[str],
        found: Sequence[tuple[int, bool] | Literal[False] | None],
    ) -> list[Json]:
        """Settle, in ``tx``, the calls of the mined hashes (one event per row that moves)
        and keep the pending hashes for the worker's pass; the answer per hash."""
        now = self.now()
        answers: list[Json] = []
        events: list[NewEvent] = []
        pending: list[str] = []
        for tx_hash, item in zip(hashes, found, strict=True):
            if item is None or item is False:
                pending.append(tx_hash)
                answers.append({"txHash": tx_hash, "state": "pending"})
                continue
            call, success = item
            status = PayoutStatus.CONFIRMED if success else PayoutStatus.FAILED
            settled = tx.settle_payouts(batch.id, call, status, tx_hash, now)
            tx.unwatch_payout_hash(batch.id, tx_hash)
            kind = PAYOUT_CONFIRMED if success else PAYOUT_FAILED
            events += [NewEvent(batch.owner, batch.id, p.to_wire(), now, kind) for p in settled]
            answers.append(
                {"txHash": tx_hash, "state": "mined", "transaction": call,
                 "success": success, "settled": len(settled)}
            )  # fmt: skip
        if pending:
            tx.watch_payout_hashes(batch.id, pending, now)
        if events:
            ids = tx.add_events(events)
            # Webhook endpoints that list these types get them, in this transaction.
            enqueue_webhooks(tx, list(zip(ids, events, strict=True)), now * 1000)
        return answers
