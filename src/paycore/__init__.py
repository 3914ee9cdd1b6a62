"""paycore: a non-custodial crypto invoice gateway for Flask and Litestar apps.

The core imports no web framework. Adapters (``paycore_flask``, ``paycore_litestar``) and the
storage plugin (``paycore_storage``) sit on top of it; :class:`Gateway` is the one object
they talk to, and the one a Python caller needs.
"""

from __future__ import annotations

from .config import ChainConfig, Settings
from .domain.changes import EventType
from .domain.records import Deposit, Invoice, Payment, Status
from .domain.tokens import NATIVE
from .events.signals import InvoiceEvent, on
from .gateway import Gateway

__version__ = "0.1.0"

__all__ = [
    "NATIVE",
    "ChainConfig",
    "Deposit",
    "EventType",
    "Gateway",
    "Invoice",
    "InvoiceEvent",
    "Payment",
    "Settings",
    "Status",
    "__version__",
    "on",
]
