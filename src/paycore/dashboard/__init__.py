"""The merchant dashboard: an HTML shell and ES modules shipped as package data.

Why a page in the package: a shop owner who writes no code still needs to see what was paid,
refund, withdraw and redeliver a webhook. The page is served at ``{prefix}/dashboard`` by
both adapters, inside the merchant's own app, and talks only to that origin.

Why it never holds a key the server knows of: the owner's wallet (EIP-1193,
``window.ethereum``) signs the registration of a session key the page generates
(POST /auth/register-pubkey), then that key signs every call (the session-key scheme of
docs/interface.md). Withdrawals and refunds are the unsigned transactions paycore builds,
sent by the wallet itself. secp256k1 and keccak256 are not in WebCrypto, so the page ships
its own small implementations (assets/secp256k1.js, assets/keccak.js).

The words and number formats are the checkout page's approach: the same nine languages and
its format module, imported from ``{prefix}/checkout/assets/``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from importlib.resources import files
from typing import Any

from ..checkout import Asset, package_assets


@functools.cache
def assets() -> Mapping[str, Asset]:
    """Every servable file of assets/, read once: the set is fixed when the package ships."""
    return package_assets(__package__)


@functools.cache
def _template() -> str:
    return files(__package__).joinpath("index.html").read_text(encoding="utf-8")


def page(asset_base: str, config: Mapping[str, Any]) -> bytes:
    """The HTML shell with its asset URLs relative to the page's own, so the page works
    under any mount prefix and behind a proxy that rewrites it; ``config`` (the chains'
    names, coins and explorers, as the checkout page gets them) goes into a JSON data block
    with ``<`` escaped, so no value can close the element early."""
    data = json.dumps(config, separators=(",", ":"), sort_keys=True).replace("<", "\\u003c")
    return _template().replace("{{assets}}", asset_base).replace("{{config}}", data).encode()
