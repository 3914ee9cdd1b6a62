"""A fake chain for tests: it "pays" invoices the way the chain watcher reports payments.

Each payment is a ``Deposit`` handed to ``Gateway.ingest`` (the watcher's own entry point),
so attribution, pricing, status moves, events and webhooks run as in production; nothing
writes storage directly. A reorg goes through ``Gateway.reorg_deposit``, as the watcher's
reorg handling does. The chain has one token, ``FakeChain.token``, priced 1 in every
vsCurrency by the settings of ``paycore_settings``, so a token amount is its value.
"""

from __future__ import annotations

import itertools
from decimal import Decimal

from ..chains.records import DepositBatch
from ..domain.records import Deposit, Invoice
from ..domain.tokens import normalize_token_address, to_checksum
from ..gateway import Gateway

#: A chain id no real network uses, and a token address on it.
CHAIN_ID = 3_133_700
TOKEN = to_checksum("0x" + "7e" * 20)
PAYER = to_checksum("0x" + "5a" * 20)


class FakeChain:
    def __init__(
        self,
        gateway: Gateway,
        chain_id: int = CHAIN_ID,
        token: str = TOKEN,
        price: str | Decimal = "1",
    ) -> None:
        """``price`` is the token's price in the invoices' vsCurrency, as the gateway's
        settings give it: it turns what is left to pay into a token amount."""
        self.gateway = gateway
        self.chain_id = chain_id
        self.token = normalize_token_address(chain_id, token)
        self.price = Decimal(price)
        self._owners: dict[str, str] = {}  # tx hash -> owner of the invoice it paid
        self._tx = itertools.count(1)
        self._block = itertools.count(1)
        #: Mined, not yet confirmed: tx hash -> the transfer and its confirmations.
        self._unconfirmed: dict[str, tuple[Deposit, int]] = {}

    @property
    def asset(self) -> str:
        """``chainId:token``, as ``acceptedTokens`` lists it."""
        return f"{self.chain_id}:{self.token}"

    def invoice_fields(self, value: str | Decimal = "10", **extra: object) -> dict[str, object]:
        """The fields of a new invoice payable on this chain, at an address of its own."""
        n = next(self._tx)
        return {
            "value": str(value),
            "chainId": self.chain_id,
            "description": f"test order {n}",
            "acceptedTokens": [self.asset],
            "address": "0x" + f"{n:040x}",
            **extra,
        }

    def _invoice(self, invoice: Invoice | str) -> Invoice:
        return self.gateway.get_invoice(invoice if isinstance(invoice, str) else invoice.guid)

    def pay(
        self, invoice: Invoice | str, amount: str | Decimal | None = None, *, at: int | None = None
    ) -> Deposit:
        """Send ``amount`` tokens (default: what is left to pay, or 1 on a tip jar or a
        paid invoice) to the invoice's address, mined at ``at`` (default: the gateway's
        now); returns the deposit."""
        deposit = self._transfer(invoice, amount, at)
        self.gateway.ingest(DepositBatch(self.chain_id, [deposit]))
        return deposit

    def _transfer(
        self, invoice: Invoice | str, amount: str | Decimal | None, at: int | None
    ) -> Deposit:
        current = self._invoice(invoice)
        if amount is None:
            left = max(current.value - current.paid_amount, Decimal(0))
            amount = left / self.price if left else Decimal(1)
        n = next(self._tx)
        deposit = Deposit(
            self.chain_id,
            "0x" + f"{n:064x}",
            0,
            self.token,
            PAYER,
            current.address,
            Decimal(amount),
            self.gateway.now() if at is None else at,
            next(self._block),
            "0x" + f"{n:064x}"[::-1],
        )
        self._owners[deposit.tx_hash] = current.owner
        return deposit

    # -- mined, not yet confirmed (docs/chains.md, Detection) -----------------------------------
    @property
    def required(self) -> int:
        """The chain's ``confirmations``: how deep a transfer must be to be attributed."""
        return self.gateway.settings.chain(self.chain_id).confirmations

    def mine(
        self, invoice: Invoice | str, amount: str | Decimal | None = None, *, at: int | None = None
    ) -> Deposit:
        """Send a transfer that is mined but not yet deep enough: one confirmation, shown in
        the invoice's provisional ``detected`` list, not paid (``paidAmount`` and status stay).
        :meth:`bury` mines blocks on top of it until it is attributed; :meth:`drop` is a
        reorg that removes it. Reported as the watcher reports it
        (``Gateway.record_detected``)."""
        deposit = self._transfer(invoice, amount, at)
        self._unconfirmed[deposit.tx_hash] = (deposit, 1)
        self._report()
        return deposit

    def bury(self, blocks: int = 1) -> list[Deposit]:
        """Mine ``blocks`` blocks: every unconfirmed transfer is that much deeper, and one
        deeper than ``required`` is attributed (it leaves ``detected`` for ``payments``).
        Returns the deposits attributed now."""
        confirmed: list[Deposit] = []
        for tx_hash, (deposit, depth) in list(self._unconfirmed.items()):
            if depth + blocks > self.required:
                del self._unconfirmed[tx_hash]
                confirmed.append(deposit)
            else:
                self._unconfirmed[tx_hash] = (deposit, depth + blocks)
        if confirmed:
            self.gateway.ingest(DepositBatch(self.chain_id, confirmed))
        self._report()
        return confirmed

    def drop(self, deposit: Deposit) -> None:
        """A reorg dropped the block of ``deposit`` before it was confirmed: it leaves the
        detected list, and nothing else changes."""
        self._unconfirmed.pop(deposit.tx_hash, None)
        self._report()

    def _report(self) -> None:
        pending = [deposit for deposit, _depth in self._unconfirmed.values()]
        depth = {d.block_number: n for d, n in self._unconfirmed.values()}
        self.gateway.record_detected(self.chain_id, pending, depth, self.required)

    def pay_exact(self, invoice: Invoice | str) -> Deposit:
        return self.pay(invoice)

    def pay_partial(self, invoice: Invoice | str, fraction: str = "0.5") -> Deposit:
        current = self._invoice(invoice)
        return self.pay(current, current.value * Decimal(fraction) / self.price)

    def overpay(self, invoice: Invoice | str, extra: str = "1") -> list[Deposit]:
        """Pay in full, then ``extra`` more: an ``invoice.paid``, then an ``invoice.overpaid``."""
        first = self.pay(invoice)
        return [first, self.pay(invoice, Decimal(extra))]

    def pay_late(self, invoice: Invoice | str, amount: str | None = None) -> Deposit:
        """A payment mined a second after the deadline: the invoice expires, then records
        it late."""
        current = self._invoice(invoice)
        return self.pay(current, amount, at=current.deadline + 1)

    def reorg(self, deposit: Deposit) -> list[Invoice]:
        """A reorg replaced the block of ``deposit``: the gateway takes it back, as the
        watcher does; returns the invoice's changes (empty if it was never counted)."""
        owner = self._owners.get(deposit.tx_hash)
        if owner is None:
            return []
        items = self.gateway.list_transactions(owner, chain_id=self.chain_id, offset=0, limit=200)
        for record in items[0]:
            if record.tx_hash == deposit.tx_hash and record.log_index == deposit.log_index:
                return self.gateway.reorg_deposit(record)
        return []
