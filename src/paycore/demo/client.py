"""The merchant's HTTP client: JSON calls to paycore, session-signed where the interface
asks (docs/interface.md §Authentication), written with the standard library so the demo
needs nothing beyond paycore[flask].

Signing uses eth-account directly, as a client would, not paycore's verifier: the demo
should show the interface working from the outside.
"""

from __future__ import annotations

import hashlib
import json
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlencode, urlsplit

from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount

from .errors import DemoError

TIMEOUT = 30.0


def sign_text(account: LocalAccount, text: str) -> str:
    """An EIP-191 personal signature, as a wallet's ``personal_sign`` makes."""
    return "0x" + bytes(account.sign_message(encode_defunct(text=text)).signature).hex()


class SessionKey:
    """A throwaway key the merchant's server signs requests with; the owner's wallet
    signs only once, to register it."""

    def __init__(self) -> None:
        self.account: LocalAccount = Account.create()
        self._nonce = 0

    @property
    def public_key(self) -> str:
        """Uncompressed SEC1, ``0x04`` + 64 bytes, the form /auth/register-pubkey takes."""
        return "0x04" + self.account._key_obj.public_key.to_bytes().hex()

    def headers(self, hashed: bytes) -> dict[str, str]:
        # Date.now() milliseconds, bumped if the clock has not moved, so the nonces also
        # suit a server in strict mode (docs/decisions.md, "Session nonces").
        self._nonce = max(self._nonce + 1, time.time_ns() // 1_000_000)
        digest = hashlib.sha256(hashed).hexdigest()
        return {
            "x-session-nonce": str(self._nonce),
            "x-session-signature": sign_text(self.account, f"sess:{self._nonce}:{digest}"),
        }


class Api:
    """paycore's interface at ``base`` (e.g. ``http://127.0.0.1:5000/paycore``)."""

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")
        self._path = urlsplit(self.base).path

    def get(self, path: str, query: dict[str, Any] | None = None, **kw: Any) -> Any:
        return self.call("GET", path + ("?" + urlencode(query) if query else ""), **kw)

    def post(self, path: str, body: dict[str, Any] | None = None, **kw: Any) -> Any:
        return self.call("POST", path, body, **kw)

    def call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        session: SessionKey | None = None,
        expect: int = 200,
    ) -> Any:
        """The JSON answer; any other status than ``expect`` is a failed step."""
        data = b"" if body is None else json.dumps(body).encode()
        headers = {"accept": "application/json"}
        if body is not None:
            headers["content-type"] = "application/json"
        if session is not None:
            # A signed GET covers the request URI, a POST the exact body bytes.
            signed = (self._path + path).encode() if method == "GET" else data
            headers |= session.headers(signed)
        request = urllib.request.Request(
            self.base + path, data=data if method != "GET" else None, headers=headers, method=method
        )
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                status, text = response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read().decode(errors="replace")
        except OSError as exc:
            raise DemoError(f"{method} {path.split('?')[0]}: {exc}") from None
        if status != expect:
            line = text.strip().splitlines()[0] if text.strip() else "(empty body)"
            raise DemoError(f"{method} {path.split('?')[0]} answered {status}: {line}")
        return json.loads(text) if text else None


def fetch(url: str) -> tuple[int, str]:
    """A plain GET, as a browser opening the payment page would."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, ""
    except OSError as exc:
        raise DemoError(f"GET {url}: {exc}") from None
