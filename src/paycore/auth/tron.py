"""TIP-191 message signatures: what TronLink and TronWeb's ``signMessageV2`` produce.

A merchant whose wallet is TronLink cannot make an EIP-191 signature: TronWeb hashes
``"\\x19TRON Signed Message:\\n" + len(message) + message`` with keccak256 (TIP-191, the
Tron twin of EIP-191) and signs that digest with the same secp256k1 key an EVM wallet would
use. So the signer is recovered exactly as for EIP-191, only the prefix differs; the
address it yields is the same 20 bytes, written in base58 with Tron's 0x41 prefix.

``len(message)`` counts UTF-8 bytes, as TronWeb does (it hashes ``toUtf8Bytes(message)``).
The older ``signMessage`` (v1, which signed a hex string's hash with a fixed ``32`` length)
is not accepted: TronLink signs v2 for text messages, and one rule is easier to audit.
"""

from __future__ import annotations

from ..crypto.hashing import keccak256
from ..domain.tokens import tron_from_hex
from .signatures import SESSION_PREFIX, parse_signature, public_key_to_address, recover_public_key

_TIP191_PREFIX = b"\x19TRON Signed Message:\n"


def tron_message_hash(message: str | bytes) -> bytes:
    """The digest TronWeb's ``signMessageV2`` signs for ``message``."""
    data = message.encode("utf-8") if isinstance(message, str) else message
    return keccak256(_TIP191_PREFIX + str(len(data)).encode("ascii") + data)


def recover_tron_address(
    message: str | bytes, signature: object, *, prefix: str = SESSION_PREFIX
) -> str:
    """The base58 Tron address that signed ``message`` as a TIP-191 message.

    The signature is read by :func:`~paycore.auth.signatures.parse_signature`, so the same
    rules hold as for EIP-191 (65 bytes, v 27/28 or 0/1, low s), and a problem raises
    AuthError with ``prefix``.
    """
    raw = parse_signature(signature, prefix=prefix)
    public_key = recover_public_key(tron_message_hash(message), raw, prefix=prefix)
    return tron_from_hex(public_key_to_address(public_key))
