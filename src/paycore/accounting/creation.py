"""The invoice creation path's signature, for the services that make invoices through it.

Payment links and subscriptions do not build invoices themselves: each is handed the
gateway's one creation path (``MakeInvoice``) and calls it inside its own transaction, so a
link's use or a period and the invoice it opens commit together. That path stores the
invoice, may derive its address from the owner's wallet index, and (``rate_lock``) locks its
quotes; ``NewInvoiceTx`` is those concerns of storage and no more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..domain.invoices import NewInvoice
from ..domain.records import Invoice
from ..prices.pricing import PriceTx
from ..storage.protocols.invoices import Invoices
from ..storage.protocols.merchant import WalletIndexes


class NewInvoiceTx(Invoices, WalletIndexes, PriceTx, Protocol):
    """What creating an invoice touches: the invoice, the owner's wallet indexes, the prices
    and the locked quotes."""


#: ``(tx, owner, request, now, checkout_url) -> the stored invoice``.
MakeInvoice = Callable[[NewInvoiceTx, str, NewInvoice, int, str | None], Invoice]
