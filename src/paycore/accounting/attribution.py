"""Attribution: which invoice a confirmed deposit pays, at what value, and taking back one a
reorg removed -- one at a time, or a watcher's batch at once -- and the withdrawals that pay
pending refunds.

All run inside the caller's storage transaction; none knows about HTTP. The rules they
apply are the domain's, pure and without I/O: which invoice a deposit goes to
(``paycore.domain.invoices.pick_invoice``), what it does to the invoice
(``paycore.domain.machine``), which withdrawal pays which refund
(``paycore.domain.refunds``). What is here reads and writes: the invoices at an address,
locked, the transfers already recorded, the valuation of a deposit in its invoice's
vsCurrency (``paycore.prices``). A batch decides deposit by deposit exactly as single
attribution does (one shared ``_valued``), and only its reads and writes are gathered, so
the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from decimal import Decimal
from typing import Protocol

import attrs

from ..domain import machine
from ..domain import refunds as refund_rules
from ..domain.changes import EventType
from ..domain.detected import Detected
from ..domain.invoices import pick_invoice
from ..domain.money import value_at
from ..domain.records import Deposit, Invoice, Payment, Transaction, Valuation
from ..errors import PriceUnavailable
from ..prices.pricing import DepositValuer, PriceTx
from ..storage.contract import TransferKey
from ..storage.protocols.invoices import Invoices
from ..storage.protocols.refunds import Refunds
from ..storage.protocols.transactions import Transactions


class LedgerTx(Invoices, Transactions, Protocol):
    """The invoices and the transactions that pay them: what a reorg rewrites."""


class AttributionTx(LedgerTx, PriceTx, Protocol):
    """What attributing a deposit reads and writes: the ledger, and the prices and locked
    quotes that value the deposit (``DepositValuer``)."""


class RefundLedgerTx(LedgerTx, Refunds, Protocol):
    """What settling refunds from withdrawals touches: the ledger and the refunds."""


def attribute_deposit(
    tx: AttributionTx, deposit: Deposit, prices: DepositValuer, tolerance: Decimal
) -> list[Invoice]:
    """Record a deposit once and apply it; returns the invoice records to emit as events.

    Idempotent: the transaction row's unique key (chain, txHash, logIndex, token) makes a
    second attribution of the same deposit a no-op. Raises ``PriceUnavailable`` (or its
    ``StalePrice``) for a counted deposit with no fresh price in the invoice's vsCurrency,
    leaving nothing written (the watcher parks it and retries later).
    """
    candidates = tx.invoices_at_address(deposit.chain_id, deposit.to, for_update=True)
    valued = _valued(tx, candidates, deposit, prices)
    if valued is None:
        return []
    target, record, payment = valued
    # A row a reorg flagged gives way: the same transfer, mined again, counts once more.
    if not tx.insert_transaction(record) or not record.counted:
        return []
    changes = machine.attribute(target, payment, tolerance)
    tx.update_invoice(changes[-1])
    return changes


def detected_transfers(
    tx: Invoices,
    chain_id: int,
    transfers: Sequence[Deposit],
    depth: Mapping[int, int],
    required: int,
    now: int,
) -> list[Detected]:
    """The transfers of ``chain_id`` mined but not yet ``required`` deep, as the detected
    transfers of the invoices they would pay (``paycore.domain.detected``): each goes to
    the invoice attribution would pick now (:func:`pick_invoice`), and only when that
    invoice accepts its token -- a transfer that would not count is not "confirming".
    ``depth`` is each block's confirmations (1: the head). Reads, never locks: nothing
    here changes an invoice."""
    wanted = sorted({t.to for t in transfers if t.chain_id == chain_id})
    at = tx.invoices_at_addresses(chain_id, wanted) if wanted else {}
    found: list[Detected] = []
    for transfer in transfers:
        target = pick_invoice(at.get(transfer.to, []), transfer)
        if target is None or f"{chain_id}:{transfer.token}" not in target.accepted_tokens:
            continue
        found.append(
            Detected(
                chain_id=chain_id,
                tx_hash=transfer.tx_hash,
                log_index=transfer.log_index,
                token=transfer.token,
                from_=transfer.from_,
                to=transfer.to,
                amount=transfer.amount,
                block_number=transfer.block_number,
                block_hash=transfer.block_hash,
                timestamp=transfer.timestamp,
                confirmations=depth[transfer.block_number],
                required=required,
                guid=target.guid,
                seen_at=now,
            )
        )
    return found


def transfer_key(deposit: Deposit) -> TransferKey:
    """The transfer a deposit is: the unique key of its transaction row."""
    return (deposit.chain_id, deposit.tx_hash, deposit.log_index, deposit.token)


class AttributionRace(Exception):
    """A deposit of the batch was recorded by another transaction while the batch was being
    attributed (it would have been counted twice): the caller rolls back and retries."""


@attrs.frozen
class Attributed:
    """What :func:`attribute_deposits` did with a batch, in chain order."""

    #: Invoice records to emit as events, one per change.
    changes: list[Invoice]
    #: Deposits recorded now or before: nothing more to do for them.
    done: list[Deposit]
    #: Deposits set aside, with why: no usable price, or behind such a one at their address.
    waiting: list[tuple[Deposit, str]]
    #: With ``hold``: the first deposit that could not be valued, and why; it and every
    #: deposit after it were left alone.
    held: tuple[Deposit, str] | None = None


#: Why a deposit with a usable price waits all the same (``paycore.prices.parking``).
BEHIND = "behind a deposit waiting for a price"


def attribute_deposits(
    tx: AttributionTx,
    deposits: Sequence[Deposit],
    prices: DepositValuer,
    tolerance: Decimal,
    *,
    waiting: Set[str] = frozenset(),
    hold: bool = False,
) -> Attributed:
    """Record and apply a batch of deposits (chain order) in ``tx``, as
    :func:`attribute_deposit` would one after the other, with a constant number of reads
    and writes: the invoices of every address, locked, in one read; the transfers already
    recorded in one; the new rows, the invoice updates, in one write each.

    A counted deposit with no usable price is set aside (``waiting``), and so is every later
    deposit to an address in ``waiting`` or to one that had a deposit set aside, keeping each
    address's deposits in order; with ``hold`` the batch stops at the first one instead
    (``held``). Raises :class:`AttributionRace` when a row it expected to be new was not:
    the transaction must then be rolled back."""
    by_address: dict[tuple[int, str], list[Invoice]] = {}
    addresses: dict[int, set[str]] = {}
    for deposit in deposits:
        addresses.setdefault(deposit.chain_id, set()).add(deposit.to)
    # Locks first, then the known transfers: another attributor of these deposits takes
    # the same locks before it writes, so what is read next cannot change under us.
    for chain_id, wanted in sorted(addresses.items()):
        found = tx.invoices_at_addresses(chain_id, sorted(wanted), for_update=True)
        by_address.update(((chain_id, a), items) for a, items in found.items())
    known = tx.known_transfers([transfer_key(d) for d in deposits])
    valuer = prices.for_batch(tx, [i for items in by_address.values() for i in items])
    blocked = set(waiting)
    done: list[Deposit] = []
    aside: list[tuple[Deposit, str]] = []
    records: list[Transaction] = []
    changes: list[Invoice] = []
    changed: dict[str, Invoice] = {}
    held: tuple[Deposit, str] | None = None
    for deposit in deposits:
        key = transfer_key(deposit)
        if key in known:  # recorded before (a re-scan): already applied
            done.append(deposit)
            continue
        if deposit.to in blocked:
            aside.append((deposit, BEHIND))
            continue
        candidates = by_address.get((deposit.chain_id, deposit.to), [])
        try:
            valued = _valued(tx, candidates, deposit, valuer)
        except PriceUnavailable as exc:
            if hold:
                held = (deposit, str(exc))
                break
            aside.append((deposit, str(exc)))
            blocked.add(deposit.to)
            continue
        known.add(key)  # the same transfer twice in a batch counts once
        done.append(deposit)
        if valued is None:
            continue
        target, record, payment = valued
        records.append(record)
        if not record.counted:
            continue
        steps = machine.attribute(target, payment, tolerance)
        candidates[candidates.index(target)] = changed[target.guid] = steps[-1]
        changes.extend(steps)
    if not all(tx.insert_transactions(records)):
        raise AttributionRace("a deposit of the batch was recorded meanwhile")
    tx.update_invoice_states(list(changed.values()))
    return Attributed(changes, done, aside, held)


def _valued(
    tx: PriceTx, candidates: list[Invoice], deposit: Deposit, prices: DepositValuer
) -> tuple[Invoice, Transaction, Payment] | None:
    """The invoice ``deposit`` pays among ``candidates`` (those at its address, oldest
    first), its transaction row and its payment; None when no invoice is there. Raises
    ``PriceUnavailable`` for a counted deposit with no usable price."""
    target = pick_invoice(candidates, deposit)
    if target is None:
        return None
    token_id = f"{deposit.chain_id}:{deposit.token}"
    counted = token_id in target.accepted_tokens
    valuation: Valuation | None
    try:
        valuation = prices.valuation(tx, target, token_id, deposit.timestamp)
        vs_value = value_at(valuation.rate, deposit.amount)
    except PriceUnavailable:
        if counted:
            raise
        valuation = None
        vs_value = Decimal(0)  # an unpriced foreign token is still recorded, at no value
    payment = Payment(
        tx_hash=deposit.tx_hash,
        log_index=deposit.log_index,
        chain_id=deposit.chain_id,
        token=deposit.token,
        from_=deposit.from_,
        amount=deposit.amount,
        vs_value=vs_value,
        timestamp=deposit.timestamp,
    )
    record = Transaction.of_deposit(
        payment,
        owner=target.owner,
        guid=target.guid,
        counted=counted,
        block_number=deposit.block_number if deposit.block_hash else None,
        block_hash=deposit.block_hash or None,
        valuation=valuation,
    )
    return target, record, payment


def reorg_deposit(tx: LedgerTx, record: Transaction, now: int, tolerance: Decimal) -> list[Invoice]:
    """Take a deposit whose block a reorg replaced back out; returns the invoice records to
    emit as events (none for a deposit that was not counted, or already taken back).

    The row is flagged ``reorged`` (it stays stored, listed nowhere); the payment leaves its
    invoice, whose paidAmount and status are recomputed by the state machine
    (``domain.machine.remove_payment``). Idempotent through ``mark_reorged``, which flags a row
    once. If the transfer is mined again, :func:`attribute_deposit` counts it again."""
    flagged = tx.mark_reorged(*record.key)
    if flagged is None or not flagged.counted or flagged.guid is None:
        return []
    invoice = tx.get_invoice(flagged.guid, for_update=True)
    if invoice is None:
        return []
    changes = machine.remove_payment(invoice, flagged.key, now, tolerance)
    if changes:
        tx.update_invoice(changes[-1])
    return changes


def refunds_paid(
    tx: RefundLedgerTx, chain_id: int, withdrawals: Sequence[Transaction], vs_currency: str
) -> tuple[list[Transaction], list[Invoice]]:
    """The watcher's withdrawals to record, in ``tx``: each new one that pays a pending
    refund (``domain.refunds.match_withdrawals``) as that refund's transaction, and the
    refund confirmed. Returns them in chain order, and the invoices whose refunds were
    confirmed, to announce. A withdrawal recorded before (a re-scan) confirms nothing.
    ``vs_currency`` names the rate's currency when the refund's invoice is gone."""
    owners = sorted({w.owner for w in withdrawals})
    pending = tx.pending_refunds(chain_id, owners)
    if not pending:
        return list(withdrawals), []
    known = tx.known_transfers([w.key for w in withdrawals])
    fresh = [w for w in withdrawals if w.key not in known]
    records, paid = refund_rules.match_withdrawals(pending, fresh)
    matched = [(r, refund) for r, refund in zip(records, paid, strict=True) if refund]
    # The invoices first, in guid order, as a cancellation locks its invoice before
    # its refund: the two never wait on each other crosswise.
    guids = sorted({refund.guid for _r, refund in matched})
    locked = {guid: tx.get_invoice(guid, for_update=True) for guid in guids}
    paying: dict[tuple[int, str, int, str], Transaction] = {}
    changed: set[str] = set()
    for record, refund in matched:
        if tx.settle_refund(refund):  # False: cancelled meanwhile; a plain withdrawal
            # Valued at the refund's own rate (its vsValue's), not the table's now.
            invoice = locked[refund.guid]
            rate = Valuation(
                refund.rate,
                f"refund:{refund.rate_source.value}",
                refund.created_at,
                invoice.vs_currency if invoice is not None else vs_currency,
            )
            paying[record.key] = attrs.evolve(record, valuation=rate)
            changed.add(refund.guid)
    invoices = [locked[g] for g in guids if g in changed]
    refunded = [attrs.evolve(i, change=EventType.REFUNDED) for i in invoices if i]
    return [paying.get(w.key, w) for w in withdrawals], refunded
