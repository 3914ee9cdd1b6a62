"""The Gateway's refunds: POST /refund builds a refund's unsigned transaction and records
it pending; a pending refund may be cancelled (docs/interface.md, POST /refund).

The rules are ``paycore.domain.refunds``' and the refund's transition table
``paycore.domain.refund_machine``'s; a refund is confirmed when the watcher sees the wallet
pay it (``Gateway.ingest``, through ``paycore.accounting.attribution.refunds_paid``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..chains import RefundBackend, WithdrawRequest
from ..domain import refund_machine
from ..domain import refunds as refund_rules
from ..domain.changes import EventType
from ..domain.records import Invoice, Refund
from ..domain.refund_machine import RefundMove
from ..domain.refunds import BuiltRefund, CreateRefund, NewRefund
from ..domain.tokens import normalize_owner
from ..errors import Conflict, Forbidden, InvalidInput, InvoiceNotFound, NotFound

if TYPE_CHECKING:
    from .parts import GatewayParts


class RefundOperations:
    """``Gateway.refund_invoice`` and ``Gateway.cancel_refund``."""

    def refund_invoice(
        self: GatewayParts, owner: str, request: NewRefund | Mapping[str, Any]
    ) -> BuiltRefund:
        """Refund a paid invoice of ``owner``, whole or in part, and return the pending
        refund with the unsigned transaction that pays it from the owner's wallet.

        ``request`` is a :class:`~paycore.domain.refunds.NewRefund`, or the JSON fields of
        POST /refund (``guid``, optional ``amount`` or ``vsAmount``, ``token``, ``to``,
        ``rateSource``, ``owner``). The rules are ``paycore.domain.refunds``'; the
        transaction is the one /initWithdraw builds, paying the refund's recipient. Only once
        it is built is the refund recorded, pending, with its invoice event, in one storage
        transaction that re-checks what is left to refund with the invoice locked; a refusal
        at any step (InvalidInput, Forbidden, Conflict, InvoiceNotFound, a chain node's
        error) records nothing; another owner's invoice is InvoiceNotFound, as a missing
        one. The watcher confirms it when the wallet pays it
        (:meth:`ingest`).
        """
        if not isinstance(request, NewRefund):
            request = self._read_fields(CreateRefund, request)
        claimed = getattr(request, "owner", None)
        if claimed is not None and normalize_owner(claimed, "owner") != owner:
            raise Forbidden("owner does not match the session key's owner")
        invoice = self.get_invoice(request.guid)
        if invoice.owner != owner:
            # The same answer as no invoice at all, as /link/disable and /webhook/redeliver
            # give: a refusal must not tell which ids are someone else's.
            raise InvoiceNotFound(invoice.guid)
        refund_rules.check_refundable(invoice)
        token = refund_rules.refund_token(invoice, request.token)
        chain_id = invoice.chain_id
        backend = self.chains.get(chain_id)
        if not isinstance(backend, RefundBackend):
            raise InvalidInput("guid", f"no backend builds refunds on chain {chain_id}")
        decimals = backend.token_decimals(chain_id, token)
        if decimals is None:
            raise InvalidInput("token", f"{chain_id}:{token} has no decimals on chain")
        vs = invoice.vs_currency
        plan = refund_rules.plan_refund(
            invoice,
            request,
            token,
            decimals,
            lambda: self.pricing.table(vs).price(f"{chain_id}:{token}"),
        )
        unsigned = backend.init_withdraw(
            self, owner, chain_id, WithdrawRequest(to=plan.to, token=token, value=plan.units)
        )
        with self._storage.transaction() as tx:
            current = tx.get_invoice(invoice.guid, for_update=True)
            if current is None:
                raise InvoiceNotFound(invoice.guid)
            [current] = self._with_refunds(tx, [current])
            refund_rules.check_room(current, plan, decimals)
            refund = refund_rules.new_refund(current, plan, self.now())
            tx.insert_refund(refund)
            [announced], payloads = self._announce(tx, [current], EventType.REFUND_PENDING)
        self._notify(owner, payloads)
        return BuiltRefund(refund, unsigned, announced)

    def cancel_refund(self: GatewayParts, owner: str, refund_id: str) -> tuple[Refund, Invoice]:
        """Withdraw ``owner``'s pending refund ``refund_id`` (its transaction was never
        sent, or will not be): what it held becomes refundable again, and the change goes
        out as an invoice event. Returns the refund and its invoice as they now are.
        NotFound (none, or another owner's), Conflict (no longer pending: confirmed on
        chain, or cancelled already); nothing changes then.

        Cancel only a refund whose transaction will never be mined: a withdrawal that
        arrives later is recorded as a plain withdrawal, not as this refund."""
        with self._storage.transaction() as tx:
            found = tx.get_refund(refund_id)
            if found is None:
                raise NotFound(f"not found: refund {refund_id[:100]}")
            if found.owner != owner:  # as if there were none (see refund_invoice)
                raise NotFound(f"not found: refund {refund_id[:100]}")
            invoice = tx.get_invoice(found.guid, for_update=True)
            if invoice is None:
                raise InvoiceNotFound(found.guid)
            current = tx.get_refund(refund_id)  # as it stands, now the invoice is locked
            if current is None or not refund_machine.allows(current.status, RefundMove.CANCEL):
                status = "gone" if current is None else current.status.value
                raise Conflict(f"Conflict: refund {refund_id} is {status}, not pending")
            cancelled = refund_machine.cancel(current, self.now())
            if not tx.settle_refund(cancelled):
                raise Conflict(f"Conflict: refund {refund_id} is no longer pending")
            [announced], payloads = self._announce(tx, [invoice], EventType.REFUND_CANCELLED)
        self._notify(owner, payloads)
        return cancelled, announced
