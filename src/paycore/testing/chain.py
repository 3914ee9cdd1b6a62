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
        self.gateway.ingest(DepositBatch(self.chain_id, [deposit]))
        return deposit

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
