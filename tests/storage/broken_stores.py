"""Deliberately broken stores: the proof that the shipped contract suite
(``paycore.testing.storage_contract``) fails a store that breaks a duty it states.

Each store wraps the in-memory store and breaks exactly ONE duty of ``paycore.storage``'s
contract (its docstring says which); everything else passes through unchanged.
``FaithfulStorage``, the wrapper that breaks nothing, must pass the whole suite, so a failure
is the broken duty's and not the wrapper's. test_storage_broken_stores.py runs the suite
against every store of ``BROKEN`` and asserts each one fails at least one test.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import attrs

from paycore.domain.records import Invoice, OutboxEvent, Refund, SessionKey
from paycore.prices.records import StoredPrice
from paycore.storage import StorageTx
from paycore.storage.memory import MemoryStorage
from paycore.webhooks.records import ClaimedDelivery


class Tx:
    """A unit of work passed through to the memory store's; subclasses override one duty."""

    def __init__(self, inner: StorageTx, store: FaithfulStorage) -> None:
        self.inner = inner
        self.store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class FaithfulStorage:
    """Breaks nothing: the wrapper every broken store is built on, held to the whole suite."""

    tx_class: type[Tx] = Tx

    def __init__(self, *, clock: Callable[[], float]) -> None:
        self.inner = MemoryStorage(clock=clock)
        #: What a broken store keeps across transactions (outside any rollback).
        self.kept: dict[Any, Any] = {}

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        with self.inner.transaction() as tx:
            yield self.tx_class(tx, self)

    def spend_nonce(
        self, address: str, nonce: int, digest: str, *, window: int, strict: bool = False, now: int
    ) -> SessionKey | None:
        with self.transaction() as tx:
            found: SessionKey | None = tx.spend_nonce(
                address, nonce, digest, window=window, strict=strict, now=now
            )
            return found

    def read_invoice(self, guid: str) -> Any:
        with self.transaction() as tx:
            return tx.read_invoice(guid)

    def close(self) -> None:
        self.inner.close()


BROKEN: dict[str, type[FaithfulStorage]] = {}


def broken(tx_class: type[Tx]) -> type[Tx]:
    """Register a store whose units of work are ``tx_class``, named after it."""
    store = type(tx_class.__name__, (FaithfulStorage,), {"tx_class": tx_class})
    store.__doc__ = tx_class.__doc__
    BROKEN[tx_class.__name__] = store
    return tx_class


# -- nonces, signatures, challenges, notices: once-only duties -------------------------------


@broken
class AcceptsReplayedNonce(Tx):
    """A message already accepted (same key, nonce and digest) is accepted again."""

    def accept_nonce(self, address: str, nonce: int, digest: str, **kw: Any) -> bool:
        seen = (address, nonce, digest) in self.store.kept
        ok = bool(self.inner.accept_nonce(address, nonce, digest, **kw))
        if ok:
            self.store.kept[(address, nonce, digest)] = True
        return ok or seen

    def spend_nonce(self, address: str, nonce: int, digest: str, **kw: Any) -> SessionKey | None:
        seen = (address, nonce, digest) in self.store.kept
        key = self.inner.spend_nonce(address, nonce, digest, **kw)
        if key is not None:
            self.store.kept[(address, nonce, digest)] = True
        elif seen:
            key = self.inner.get_session_key(address)
        return key


@broken
class AdvancesNonceBackwards(Tx):
    """``advance_nonce`` sets the nonce even when it is not higher (no compare-and-set)."""

    def advance_nonce(self, address: str, nonce: int) -> bool:
        key = self.inner.get_session_key(address)
        if key is None:
            return False
        if not self.inner.advance_nonce(address, nonce):
            self.inner.delete_session_key(address)
            self.inner.put_session_key(attrs.evolve(key, last_seen_nonce=nonce))
        return True


@broken
class RemembersNoSignature(Tx):
    """A salt-signed call's signature is never remembered: every replay passes."""

    def remember_signature(self, digest: str, expires_at: int, **kw: Any) -> bool:
        self.inner.remember_signature(digest, expires_at, **kw)
        return True


@broken
class HandsOutAChallengeTwice(Tx):
    """A taken proof-of-work challenge can be taken again."""

    def take_challenge(self, challenge: str) -> Any:
        taken = self.inner.take_challenge(challenge)
        if taken is not None:
            self.store.kept[challenge] = taken
        return self.store.kept.get(challenge)


@broken
class SendsANoticeTwice(Tx):
    """``claim_notice`` says yes to every claim, so a notice goes out more than once."""

    def claim_notice(self, key: str, now: int) -> bool:
        self.inner.claim_notice(key, now)
        return True


@broken
class ForgetsAnIdempotencyClaim(Tx):
    """An idempotency key's claim is never kept: every retry claims the key anew."""

    def claim_idempotency_key(self, *args: Any, **kw: Any) -> Any:
        self.inner.claim_idempotency_key(*args, **kw)
        return None


# -- transactions and counters ---------------------------------------------------------------


@broken
class CountsADepositTwice(Tx):
    """``insert_transaction`` answers ``True`` for a transfer it already holds."""

    def insert_transaction(self, tx: Any) -> bool:
        self.inner.insert_transaction(tx)
        return True


@broken
class DoubleCountsAnIngestBatch(Tx):
    """``insert_transactions`` answers ``True`` for every record of a batch, known or not."""

    def insert_transactions(self, records: Sequence[Any]) -> list[bool]:
        self.inner.insert_transactions(records)
        return [True] * len(records)


@broken
class ForgetsTheReorgCounter(Tx):
    """``count_transactions`` does not follow reorg flags: a taken-back deposit still counts."""

    def mark_reorged(self, *key: Any) -> Any:
        flagged = self.inner.mark_reorged(*key)
        if flagged is not None:
            self.store.kept[flagged.owner] = self.store.kept.get(flagged.owner, 0) + 1
        return flagged

    def count_transactions(self, owner: str, **kw: Any) -> int:
        return int(self.inner.count_transactions(owner, **kw)) + self.store.kept.get(owner, 0)


@broken
class KnowsReorgedTransfers(Tx):
    """``known_transfers`` also names transfers whose rows are flagged reorged."""

    def mark_reorged(self, *key: Any) -> Any:
        flagged = self.inner.mark_reorged(*key)
        if flagged is not None:
            self.store.kept[tuple(key)] = True
        return flagged

    def known_transfers(self, keys: Sequence[Any]) -> set[Any]:
        known: set[Any] = self.inner.known_transfers(keys)
        return known | {k for k in keys if tuple(k) in self.store.kept}


# -- invoices: paging, ordering, sharing -----------------------------------------------------


@broken
class PagesOffByOne(Tx):
    """``list_invoices`` skips one row too many on every page after the first."""

    def list_invoices(self, *, offset: int = 0, **kw: Any) -> Any:
        return self.inner.list_invoices(offset=offset + 1 if offset else 0, **kw)


@broken
class ReturnsSharedInvoices(Tx):
    """``get_invoice`` hands out the same object every time: a caller's change to its
    ``data`` changes what the next reader gets."""

    def get_invoice(self, guid: str, **kw: Any) -> Invoice | None:
        found: Invoice | None = self.inner.get_invoice(guid, **kw)
        if found is None:
            return None
        kept: Invoice = self.store.kept.setdefault(guid, found)
        return kept if kept == found or kept.data != found.data else found

    def update_invoice(self, invoice: Invoice) -> None:
        self.inner.update_invoice(invoice)
        self.store.kept.pop(invoice.guid, None)


@broken
class ListsAnAddressNewestFirst(Tx):
    """``invoices_at_address`` returns its invoices newest first, not in creation order."""

    def invoices_at_address(self, chain_id: int, address: str, **kw: Any) -> list[Invoice]:
        return list(reversed(self.inner.invoices_at_address(chain_id, address, **kw)))


@broken
class ExpiresOnTheDeadline(Tx):
    """``due_for_expiry`` includes invoices whose deadline is ``now`` itself, not before."""

    def due_for_expiry(self, now: int, limit: int) -> list[str]:
        found: list[str] = self.inner.due_for_expiry(now + 1, limit)
        return found


# -- outbox, queues, deliveries ---------------------------------------------------------------


@broken
class ReordersTheOutbox(Tx):
    """``drain_queue`` hands a queue's events out newest first."""

    def drain_queue(self, consumer: str, cap: int) -> list[OutboxEvent]:
        return list(reversed(self.inner.drain_queue(consumer, cap)))


@broken
class DrainsWithoutConsuming(Tx):
    """``drain_queue`` hands out the previous drain's events again with the new ones."""

    def drain_queue(self, consumer: str, cap: int) -> list[OutboxEvent]:
        fresh: list[OutboxEvent] = self.inner.drain_queue(consumer, cap)
        again: list[OutboxEvent] = self.store.kept.get(consumer, [])
        self.store.kept[consumer] = fresh or again
        return again + fresh if fresh else again


@broken
class HandsOneDeliveryToTwo(Tx):
    """A delivery under a live lease is handed to a second claimant as well."""

    def claim_deliveries(self, now: int, lease_ms: int, token: str, limit: int, **kw: Any) -> Any:
        claimed: list[ClaimedDelivery] = self.inner.claim_deliveries(
            now, lease_ms, token, limit, **kw
        )
        leased: list[ClaimedDelivery] = self.store.kept.get("leased", [])
        others = [
            attrs.evolve(c, lease_token=token)
            for c in leased
            if c.lease_token != token and now < c.lease_until
        ][: max(0, limit - len(claimed))]
        self.store.kept["leased"] = [*leased, *claimed]
        return claimed + others


@broken
class RedeliversWithoutResettingAttempts(Tx):
    """``redeliver`` answers the delivery with its attempt count not reset."""

    def redeliver(self, delivery_id: int, owner: str, now: int) -> Any:
        found = self.inner.redeliver(delivery_id, owner, now)
        return None if found is None else attrs.evolve(found, attempts=found.attempts + 1)


# -- chains ----------------------------------------------------------------------------------


@broken
class LosesTheLeasesFencing(Tx):
    """``advance_chain`` moves the cursor for a holder whose lease another has taken over."""

    def advance_chain(self, chain_id: int, holder: str, *args: Any) -> bool:
        if self.inner.advance_chain(chain_id, holder, *args):
            return True
        current = self.inner.get_chain_cursor(chain_id)
        if current is None or current.holder is None:
            return False
        self.inner.release_chain(chain_id, current.holder)
        self.inner.claim_chain(chain_id, holder, args[2], args[3])
        return bool(self.inner.advance_chain(chain_id, holder, *args))


@broken
class TakesALiveLease(Tx):
    """``claim_chain`` takes a chain's lease from a holder whose lease is still live."""

    def claim_chain(self, chain_id: int, holder: str, now: int, lease_ms: int) -> Any:
        got = self.inner.claim_chain(chain_id, holder, now, lease_ms)
        if got is None:
            current = self.inner.get_chain_cursor(chain_id)
            if current is not None and current.holder is not None:
                self.inner.release_chain(chain_id, current.holder)
            got = self.inner.claim_chain(chain_id, holder, now, lease_ms)
        return got


# -- wallet indexes, app keys, links ----------------------------------------------------------


@broken
class ReusesAWalletIndex(Tx):
    """``allocate_wallet_index`` hands the owner's first index out twice."""

    def allocate_wallet_index(self, owner: str, chain_id: int) -> int:
        return max(0, int(self.inner.allocate_wallet_index(owner, chain_id)) - 1)


@broken
class IgnoresTheAppKeyCap(Tx):
    """``add_app_key`` lets an owner hold one key more than the cap."""

    def add_app_key(self, key: Any, cap: int) -> Any:
        return self.inner.add_app_key(key, cap + 1)


@broken
class IgnoresTheLinksRateLimit(Tx):
    """``use_payment_link`` counts uses past the rate window's limit."""

    def use_payment_link(self, link_id: str, now: int, *, rate_limit: int, **kw: Any) -> Any:
        return self.inner.use_payment_link(link_id, now, rate_limit=rate_limit + 1, **kw)


# -- prices, refunds, retention --------------------------------------------------------------


@broken
class ReturnsAStalePrice(Tx):
    """``get_price`` keeps answering the first price it read of a (token, vsCurrency)."""

    def get_price(self, token: str, vs_currency: str) -> StoredPrice | None:
        found = self.inner.get_price(token, vs_currency)
        if found is None:
            return None
        kept: StoredPrice = self.store.kept.setdefault((token, vs_currency), found)
        return kept


@broken
class ParksOutOfOrder(Tx):
    """``parked_deposits`` returns the deposits newest parked first."""

    def parked_deposits(self, chain_id: int, limit: int) -> list[Any]:
        return list(reversed(self.inner.parked_deposits(chain_id, limit)))


@broken
class SettlesARefundTwice(Tx):
    """``settle_refund`` reports a refund settled already as settled again (no
    compare-and-set on ``pending``)."""

    def settle_refund(self, refund: Refund) -> bool:
        self.inner.settle_refund(refund)
        return self.inner.get_refund(refund.id) is not None


@broken
class PrunesLiveSignatures(Tx):
    """``prune_signatures`` forgets signatures that have not expired yet."""

    def prune_signatures(self, expired_before: int, limit: int) -> int:
        return int(self.inner.prune_signatures(2**62, limit))


@broken
class PrunesPendingDeliveries(Tx):
    """``prune_deliveries`` looks past ``settled_before``: recently settled ones go too."""

    def prune_deliveries(self, settled_before: int, after: int, limit: int) -> Any:
        return self.inner.prune_deliveries(2**62, after, limit)


# -- more: batches, counts, refunds, keys, leases ------------------------------------------------


@broken
class LocksABatchNewestFirst(Tx):
    """``invoices_at_addresses`` lists each address's invoices newest first, so two batches
    that share addresses take their row locks in different orders."""

    def invoices_at_addresses(self, chain_id: int, addresses: Sequence[str], **kw: Any) -> Any:
        found = self.inner.invoices_at_addresses(chain_id, addresses, **kw)
        return {address: list(reversed(rows)) for address, rows in found.items()}


@broken
class SkipsUnknownStateUpdates(Tx):
    """``update_invoice_states`` writes the known invoices of a batch and passes over an
    unknown guid instead of raising."""

    def update_invoice_states(self, records: Sequence[Invoice]) -> None:
        for record in records:
            with suppress(KeyError):
                self.inner.update_invoice_states([record])


@broken
class CountsOnlyCommittedInvoices(Tx):
    """``count_invoices`` does not count the invoices this transaction inserted."""

    def insert_invoice(self, invoice: Invoice) -> None:
        self.inner.insert_invoice(invoice)
        self.__dict__.setdefault("mine", []).append(invoice.owner)

    def count_invoices(self, *, owner: str | None = None, **kw: Any) -> int:
        mine = self.__dict__.get("mine", [])
        own = sum(1 for o in mine if owner is None or o == owner) if not kw else 0
        return int(self.inner.count_invoices(owner=owner, **kw)) - own


@broken
class EnqueuesABatchBackwards(Tx):
    """``enqueue_deliveries`` queues a batch in reverse, so ids do not follow the order given."""

    def enqueue_deliveries(self, deliveries: Sequence[Any]) -> int:
        return int(self.inner.enqueue_deliveries(list(reversed(deliveries))))


@broken
class ListsRefundsNewestFirst(Tx):
    """``refunds_of`` lists an invoice's refunds newest first, not in insertion order."""

    def refunds_of(self, guids: Sequence[str]) -> list[Refund]:
        found: list[Refund] = self.inner.refunds_of(guids)
        order = {g: i for i, g in enumerate(dict.fromkeys(r.guid for r in found))}
        return sorted(reversed(found), key=lambda r: order[r.guid])


@broken
class ReadsTheOutboxPastItsCap(Tx):
    """``outbox_since`` returns one event more than its cap."""

    def outbox_since(self, after: int | None, cap: int, owner: str | None = None) -> Any:
        return self.inner.outbox_since(after, cap + 1 if after is not None else cap, owner)


@broken
class SettlesUnderAStaleLease(Tx):
    """``finish_delivery`` reports a delivery settled by a dispatcher whose lease another has
    since claimed."""

    def finish_delivery(self, *args: Any) -> bool:
        self.inner.finish_delivery(*args)
        return True


@broken
class RevivesADeregisteredKey(Tx):
    """``put_session_key`` lets a write based on a stale read revive a deregistered key."""

    def put_session_key(self, key: SessionKey) -> None:
        stored = self.inner.get_session_key(key.address)
        if stored is not None and stored.expires_at == 0 and key.expires_at != 0:
            self.inner.delete_session_key(key.address)
        self.inner.put_session_key(key)


@broken
class WatchesEveryInvoice(Tx):
    """``watched_addresses`` ignores ``deadline_after``: settled invoices long past their
    deadline are watched for ever."""

    def watched_addresses(self, chain_id: int, deadline_after: int) -> list[str]:
        found: list[str] = self.inner.watched_addresses(chain_id, -(2**62))
        return found


@broken
class SharesALinksData(Tx):
    """``get_payment_link`` hands out the same object every time: a caller's change to its
    ``data`` changes what the next reader gets."""

    def get_payment_link(self, link_id: str) -> Any:
        found = self.inner.get_payment_link(link_id)
        if found is None:
            return None
        return self.store.kept.setdefault(("link", link_id), found)

    def disable_payment_link(self, link_id: str, *args: Any) -> Any:
        self.store.kept.pop(("link", link_id), None)
        return self.inner.disable_payment_link(link_id, *args)

    def use_payment_link(self, link_id: str, *args: Any, **kw: Any) -> Any:
        self.store.kept.pop(("link", link_id), None)
        return self.inner.use_payment_link(link_id, *args, **kw)


@broken
class RemovesAnotherOwnersAppKey(Tx):
    """``remove_app_key`` removes the key whoever's it is."""

    def remove_app_key(self, owner: str, address: str) -> bool:
        key = self.inner.get_app_key(address)
        return bool(self.inner.remove_app_key(key.owner if key else owner, address))


@broken
class RestampsAnEnabledEmail(Tx):
    """``enable_emails`` stamps ``enabled_at`` anew on a setting that was on already."""

    def enable_emails(self, owner: str, chain_id: int | None, enabled: bool, now: int) -> Any:
        if enabled:
            self.inner.enable_emails(owner, chain_id, False, now)
        return self.inner.enable_emails(owner, chain_id, enabled, now)


@broken
class ReportsEveryIndexChange(Tx):
    """``set_wallet_index_disabled`` says it changed something when it changed nothing."""

    def set_wallet_index_disabled(self, *args: Any) -> bool:
        self.inner.set_wallet_index_disabled(*args)
        return True


@broken
class RedisablesALink(Tx):
    """``disable_payment_link`` moves ``disabled_at`` of a link disabled already."""

    def disable_payment_link(self, link_id: str, owner: str, now: int) -> Any:
        found = self.inner.disable_payment_link(link_id, owner, now)
        return None if found is None else attrs.evolve(found, disabled_at=now)


@broken
class UnparksTheUnknown(Tx):
    """``unpark_deposit`` says it forgot a deposit that was never parked."""

    def unpark_deposit(self, deposit: Any) -> bool:
        self.inner.unpark_deposit(deposit)
        return True


@broken
class ListsParkedTokensUnsorted(Tx):
    """``parked_tokens`` lists the tokens in reverse order."""

    def parked_tokens(self) -> list[str]:
        return sorted(self.inner.parked_tokens(), reverse=True)


@broken
class PrunesLiveChallenges(Tx):
    """``prune_challenges`` deletes challenges that have not expired."""

    def prune_challenges(self, expired_before: int, limit: int) -> int:
        return int(self.inner.prune_challenges(2**62, limit))


@broken
class PrunesFreshIdempotencyKeys(Tx):
    """``prune_idempotency_keys`` deletes keys younger than ``created_before`` too."""

    def prune_idempotency_keys(self, created_before: int, limit: int) -> int:
        return int(self.inner.prune_idempotency_keys(2**62, limit))


@broken
class ReleasesAnotherHoldersLease(Tx):
    """``release_chain`` releases the lease whoever holds it."""

    def release_chain(self, chain_id: int, holder: str) -> None:
        current = self.inner.get_chain_cursor(chain_id)
        holder = current.holder if current is not None and current.holder else holder
        self.inner.release_chain(chain_id, holder)


@broken
class RedeliversPendingOnes(Tx):
    """``redeliver_failed`` counts pending deliveries of the owner as redelivered too."""

    def redeliver_failed(self, owner: str, since: int, now: int) -> int:
        done = int(self.inner.redeliver_failed(owner, since, now))
        return done + len(self.inner.list_deliveries(owner, status="pending")[0]) - done


@broken
class MovesAQueueFromAnywhere(Tx):
    """``move_queue`` moves a queue's position whatever ``start`` says."""

    def move_queue(self, consumer: str, start: int, to: int) -> bool:
        read = self.inner.read_outbox(consumer, 1)
        if read is None:
            return False
        return bool(self.inner.move_queue(consumer, read.position, to))


@broken
class KeepsStaleDetections(Tx):
    """``replace_detected`` adds to a chain's detected transfers without dropping the rest."""

    def replace_detected(self, chain_id: int, found: Sequence[Any]) -> None:
        guids = sorted({d.guid for d in found} | self.store.kept.get(("det", chain_id), set()))
        old = [d for d in self.inner.detected_of(guids) if d.chain_id == chain_id]
        self.store.kept[("det", chain_id)] = set(guids)
        keep = {(d.tx_hash, d.log_index, d.token) for d in found}
        self.inner.replace_detected(
            chain_id,
            [d for d in old if (d.tx_hash, d.log_index, d.token) not in keep] + list(found),
        )


@broken
class ReadsTheQuotesOfOneInvoice(Tx):
    """``get_quotes_of`` leaves out all but the first invoice's quotes."""

    def get_quotes_of(self, guids: Sequence[str]) -> list[Any]:
        return list(self.inner.get_quotes_of(list(guids)[:1]))


@broken
class StartsWatchingTooLate(Tx):
    """``earliest_watched`` answers the newest watched invoice's creation, not the oldest."""

    def earliest_watched(self, chain_id: int, deadline_after: int) -> int | None:
        first = self.inner.earliest_watched(chain_id, deadline_after)
        return None if first is None else first + 1


@broken
class LosesTheEndOfAKeyset(Tx):
    """``invoices_after`` answers ``[]`` rather than ``None`` for an ``after`` it does not
    know."""

    def invoices_after(self, **kw: Any) -> Any:
        found = self.inner.invoices_after(**kw)
        return [] if found is None else found


@broken
class ListsReorgedTransfers(Tx):
    """``list_transactions`` still shows the rows flagged reorged."""

    def mark_reorged(self, *key: Any) -> Any:
        flagged = self.inner.mark_reorged(*key)
        if flagged is not None:
            self.store.kept.setdefault("reorged", []).append(flagged)
        return flagged

    def list_transactions(self, owner: str, **kw: Any) -> Any:
        rows, total = self.inner.list_transactions(owner, **kw)
        known = {(r.chain_id, r.tx_hash, r.log_index, r.token) for r in rows}
        extra = [
            r
            for r in self.store.kept.get("reorged", [])
            if r.owner == owner and (r.chain_id, r.tx_hash, r.log_index, r.token) not in known
        ]
        return rows + extra, total


@broken
class ExportsPastTheEnd(Tx):
    """``export_invoices`` ignores ``end``."""

    def export_invoices(self, owner: str, *, end: int | None, **kw: Any) -> Any:
        return self.inner.export_invoices(owner, end=None, **kw)


@broken
class ClaimsACappedOwner(Tx):
    """``claim_deliveries`` ignores ``skip_owners``."""

    def claim_deliveries(self, *args: Any, skip_owners: Any = (), **kw: Any) -> Any:
        return self.inner.claim_deliveries(*args, **kw)


@broken
class LogsAttemptsNewestFirst(Tx):
    """``list_deliveries`` gives each delivery's attempt log newest first."""

    def list_deliveries(self, owner: str, **kw: Any) -> Any:
        rows, total = self.inner.list_deliveries(owner, **kw)
        return [attrs.evolve(d, log=tuple(reversed(d.log))) for d in rows], total


@broken
class IgnoresStrictNonces(Tx):
    """``accept_nonce`` treats ``strict`` as the window rule."""

    def accept_nonce(self, address: str, nonce: int, digest: str, **kw: Any) -> bool:
        kw.pop("strict", None)
        return bool(self.inner.accept_nonce(address, nonce, digest, **kw))

    def spend_nonce(self, address: str, nonce: int, digest: str, **kw: Any) -> Any:
        kw.pop("strict", None)
        return self.inner.spend_nonce(address, nonce, digest, **kw)


@broken
class LeavesNoFloorInStrictMode(Tx):
    """Strict mode raises ``last_seen_nonce`` and records nothing, but leaves no floor:
    switched to window mode, the key accepts again the nonces it accepted strictly."""

    def accept_nonce(self, address: str, nonce: int, digest: str, **kw: Any) -> bool:
        if not kw.get("strict"):
            return bool(self.inner.accept_nonce(address, nonce, digest, **kw))
        return bool(self.inner.advance_nonce(address, nonce))

    def spend_nonce(self, address: str, nonce: int, digest: str, **kw: Any) -> Any:
        if not kw.get("strict"):
            return self.inner.spend_nonce(address, nonce, digest, **kw)
        key = self.inner.get_session_key(address)
        if key is None or not kw["now"] < key.expires_at:
            return None
        return (
            self.inner.get_session_key(address)
            if self.accept_nonce(address, nonce, digest, strict=True)
            else None
        )


@broken
class OverwritesADuplicateRefund(Tx):
    """``insert_refund`` of an id stored already overwrites it instead of raising."""

    def insert_refund(self, refund: Refund) -> None:
        if self.inner.get_refund(refund.id) is None:
            self.inner.insert_refund(refund)


@broken
class PendsEveryOwnersRefunds(Tx):
    """``pending_refunds`` ignores ``owners``."""

    def pending_refunds(self, chain_id: int, owners: Sequence[str]) -> list[Refund]:
        everyone = self.inner.refunds_of(self.store.kept.get("guids", []))
        found = [r for r in everyone if r.chain_id == chain_id and r.status == "pending"]
        return found or list(self.inner.pending_refunds(chain_id, owners))

    def insert_refund(self, refund: Refund) -> None:
        self.inner.insert_refund(refund)
        self.store.kept.setdefault("guids", []).append(refund.guid)


@broken
class DeletesNothingButSaysSo(Tx):
    """``delete_webhook`` says a webhook was there when there was none."""

    def delete_webhook(self, owner: str) -> bool:
        self.inner.delete_webhook(owner)
        return True


@broken
class ExpiresPastTheLimit(Tx):
    """``due_for_expiry`` returns more guids than ``limit``."""

    def due_for_expiry(self, now: int, limit: int) -> list[str]:
        return list(self.inner.due_for_expiry(now, limit + 1))


@broken
class SharesWalletIndexesAcrossChains(Tx):
    """``allocate_wallet_index`` counts one sequence per owner, whatever the chain."""

    def allocate_wallet_index(self, owner: str, chain_id: int) -> int:
        return int(self.inner.allocate_wallet_index(owner, 1))


@broken
class PrunesUndrainedEvents(Tx):
    """``prune_events`` deletes old events a queue has not drained yet."""

    def prune_events(self, created_before: int, queue_cap: int, after: int, limit: int) -> Any:
        return self.inner.prune_events(created_before, 0, after, limit)


@broken
class SortsRecordedDepositsOldestFirst(Tx):
    """``recorded_deposits`` lists the oldest block first."""

    def recorded_deposits(self, chain_id: int, from_block: int) -> list[Any]:
        return list(reversed(self.inner.recorded_deposits(chain_id, from_block)))


# -- rollback ---------------------------------------------------------------------------------


class _KeepsRefunds(Tx):
    def insert_refund(self, refund: Refund) -> None:
        self.inner.insert_refund(refund)
        self.store.kept.setdefault("refunds", []).append(refund)


class KeepsRefundsOfARolledBackTransaction(FaithfulStorage):
    """A unit of work that raises is rolled back, except for the refunds it inserted."""

    tx_class = _KeepsRefunds

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        self.kept["refunds"] = []
        try:
            with self.inner.transaction() as tx:
                yield self.tx_class(tx, self)
        except BaseException:
            kept, self.kept["refunds"] = self.kept["refunds"], []
            with self.inner.transaction() as tx:
                for refund in kept:
                    if tx.get_refund(refund.id) is None:
                        tx.insert_refund(refund)
            raise


BROKEN[KeepsRefundsOfARolledBackTransaction.__name__] = KeepsRefundsOfARolledBackTransaction


class SpendsANonceInTwoSteps(FaithfulStorage):
    """``Storage.spend_nonce`` checks the message in one transaction and records it in
    another: one at a time it refuses every replay, but two requests that carry one message
    at the same moment both pass the check (the race the threaded tests exist for)."""

    def spend_nonce(
        self, address: str, nonce: int, digest: str, *, window: int, strict: bool = False, now: int
    ) -> SessionKey | None:
        passes = False
        with suppress(_DryRun), self.inner.transaction() as tx:  # the check, rolled back
            key = tx.get_session_key(address)
            passes = (
                key is not None
                and now < key.expires_at
                and tx.accept_nonce(address, nonce, digest, window=window, strict=strict)
            )
            raise _DryRun
        if not passes:
            return None
        time.sleep(0.002)  # the gap between the check and the write
        with self.inner.transaction() as tx:
            tx.accept_nonce(address, nonce, digest, window=window, strict=strict)
            found: SessionKey | None = tx.get_session_key(address)
            return found


class _DryRun(Exception):
    """Rolls a check's transaction back."""


BROKEN[SpendsANonceInTwoSteps.__name__] = SpendsANonceInTwoSteps


class CreatesForAChangedKey(FaithfulStorage):
    """``spend_nonce_then_insert_invoice_async`` spends and inserts on whatever key it
    finds, without holding it to the one expected: an invoice made for a key whose owner
    or encryption key changed since the caller saw it is stored all the same."""

    async def spend_nonce_then_insert_invoice_async(
        self,
        address: str,
        nonce: int,
        digest: str,
        *,
        window: int,
        strict: bool = False,
        now: int,
        expect: SessionKey,
        invoice: Invoice,
    ) -> SessionKey | None:
        with self.transaction() as tx:
            key: SessionKey | None = tx.spend_nonce(
                address, nonce, digest, window=window, strict=strict, now=now
            )
            if key is not None:
                tx.insert_invoice(invoice)
            return key


BROKEN[CreatesForAChangedKey.__name__] = CreatesForAChangedKey


class CreatesHalfAtOnce(FaithfulStorage):
    """``spend_nonce_then_insert_invoice`` (a sync host's creation) commits the spend and
    the invoice as two transactions: a key refused after the spend leaves its nonce
    spent, so the request's ordinary path then refuses it as a replay of itself."""

    def spend_nonce_then_insert_invoice(
        self,
        address: str,
        nonce: int,
        digest: str,
        *,
        window: int,
        strict: bool = False,
        now: int,
        expect: SessionKey,
        invoice: Invoice,
    ) -> SessionKey | None:
        key = self.spend_nonce(address, nonce, digest, window=window, strict=strict, now=now)
        if key is None or (key.owner, key.encryption_public_key) != (
            expect.owner,
            expect.encryption_public_key,
        ):
            return None
        with self.transaction() as tx:
            tx.insert_invoice(invoice)
        return key


BROKEN[CreatesHalfAtOnce.__name__] = CreatesHalfAtOnce
