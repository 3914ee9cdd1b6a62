"""paycore: a non-custodial crypto invoice gateway for Flask and Litestar apps.

The core imports no web framework. Adapters (``paycore_flask``, ``paycore_litestar``) and the
storage plugin (``paycore_storage``) sit on top of it; :class:`paycore.gateway.Gateway` is the
one object they talk to.
"""

from __future__ import annotations

__version__ = "0.1.0"
