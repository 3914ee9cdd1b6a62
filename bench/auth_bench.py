"""Session-signed request verification throughput, against the ceiling of raw recovery.

Every authenticated request pays one secp256k1 public-key recovery; nothing can verify
faster than that. This bench measures both in the same run and prints the ratio, so the
figure means the same on a slow laptop and a fast server: how much of the time per request
goes to paycore itself (header parsing, hashing, the key lookup and the nonce
compare-and-set in storage) rather than to the curve.

Requests are signed before the clock starts, each with a fresh nonce, and verified through
the full path (``paycore.auth.authenticate`` on an in-memory store). Output: one JSON object
on stdout; progress on stderr.

    python bench/auth_bench.py [--requests N]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import sys
import time
from collections.abc import Callable
from importlib.metadata import version

from coincurve import PrivateKey, PublicKey

from paycore.auth import authenticate, register_pubkey
from paycore.auth.signatures import personal_message_hash, public_key_to_address
from paycore.config import Settings
from paycore.storage.memory import MemoryStorage

NOW = 1_700_000_000
BODY = json.dumps(
    {
        "value": "49.90",
        "chainId": 1,
        "description": "Order #10042",
        "acceptedTokens": ["1:0xdAC17F958D2ee523a2206206994597C13D831ec7"],
        "data": {"orderId": 10042},
    }
).encode()


def _log(text: str) -> None:
    print(f"auth_bench: {text}", file=sys.stderr, flush=True)


def _eip191_sign(key: PrivateKey, message: str) -> str:
    """A client's personal_sign, via coincurve: quick to pre-sign thousands of requests."""
    signature = key.sign_recoverable(personal_message_hash(message), hasher=None)
    return "0x" + signature[:64].hex() + f"{signature[64] + 27:02x}"


def _rate(label: str, count: int, run: Callable[[], None]) -> float:
    start = time.perf_counter()
    run()
    elapsed = time.perf_counter() - start
    per_sec = count / elapsed
    _log(f"{label}: {count} in {elapsed:.2f} s = {per_sec:,.0f}/s")
    return per_sec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=15_000, help="requests per measurement")
    count = parser.parse_args().requests

    owner = PrivateKey(hashlib.sha256(b"bench-owner").digest())
    session = PrivateKey(hashlib.sha256(b"bench-session").digest())
    owner_address = public_key_to_address(owner.public_key.format(compressed=False))
    storage = MemoryStorage(clock=lambda: NOW)
    settings = Settings(auth_mode="strict")
    public_key = "0x" + session.public_key.format(compressed=False).hex()
    register_pubkey(
        storage,
        settings,
        {
            "ownerAddress": owner_address,
            "publicKey": public_key,
            "signature": _eip191_sign(owner, public_key),
        },
        now=NOW,
    )

    _log(f"pre-signing {count} requests")
    body_hash = hashlib.sha256(BODY).hexdigest()
    requests: list[dict[str, str]] = []
    digests: list[tuple[bytes, bytes]] = []
    for nonce in range(1, count + 1):
        message = f"sess:{nonce}:{body_hash}"
        signature = _eip191_sign(session, message)
        requests.append({"x-session-nonce": str(nonce), "x-session-signature": signature})
        sig65 = bytes.fromhex(signature[2:])
        digests.append((sig65[:64] + bytes((sig65[64] - 27,)), personal_message_hash(message)))

    def raw_recoveries() -> None:
        for signature, digest in digests:
            PublicKey.from_signature_and_message(signature, digest, hasher=None)

    def verifications() -> None:
        for headers in requests:
            authenticate(
                storage,
                settings,
                method="POST",
                uri="/invoice",
                body=BODY,
                headers=headers,
                now=NOW,
            )

    raw = _rate("raw coincurve recoveries", count, raw_recoveries)
    verify = _rate("session-signed verifications", count, verifications)
    print(
        json.dumps(
            {
                "bench": "auth",
                "requests": count,
                "verify_per_sec": round(verify),
                "raw_recover_per_sec": round(raw),
                "ratio": round(verify / raw, 3),
                "overhead_us_per_request": round((1 / verify - 1 / raw) * 1e6, 1),
                "python": platform.python_version(),
                "coincurve": version("coincurve"),
            }
        )
    )


if __name__ == "__main__":
    main()
