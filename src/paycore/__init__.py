"""paycore: a non-custodial crypto invoice gateway for Flask and Litestar apps.

The core imports no web framework. Adapters (``paycore_flask``, ``paycore_litestar``) and the
storage plugin (``paycore_storage``) sit on top of it; :class:`Gateway` is the one object
they talk to, and the one a Python caller needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import ChainConfig, Settings
    from .domain.changes import EventType
    from .domain.records import Deposit, Invoice, Payment, Status
    from .domain.tokens import NATIVE
    from .events.signals import InvoiceEvent, on
    from .gateway import Gateway

#: Where each public name lives. Read on first use (PEP 562), so that importing a light
#: submodule -- the pytest plugin ``paycore.testing.plugin``, loaded in every test session
#: of a project with paycore installed -- does not import the whole gateway.
_EXPORTS = {
    "ChainConfig": "config",
    "Settings": "config",
    "EventType": "domain.changes",
    "Deposit": "domain.records",
    "Invoice": "domain.records",
    "Payment": "domain.records",
    "Status": "domain.records",
    "NATIVE": "domain.tokens",
    "InvoiceEvent": "events.signals",
    "on": "events.signals",
    "Gateway": "gateway",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'paycore' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


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
