"""The few ABI pieces paycore speaks: selectors, event topics, calldata in and out.

Hand-rolled over ``eth_abi`` rather than web3 contract objects because the hot path (the
watcher decoding thousands of ``Transfer`` logs) must not pay for web3's per-log formatting,
and because the transaction builders must stay pure functions of their inputs. Everything
here is data in, data out: no RPC, no clock.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from eth_abi.abi import decode as abi_decode
from eth_abi.abi import encode as abi_encode

from paycore.crypto.hashing import keccak256
from paycore.domain.tokens import to_checksum


@cache
def selector(signature: str) -> bytes:
    """The 4-byte function selector of ``signature``, e.g. ``transfer(address,uint256)``."""
    return keccak256(signature.encode("ascii"))[:4]


@cache
def topic(signature: str) -> str:
    """An event's topic0 as the lowercase 0x hex that JSON-RPC logs carry."""
    return "0x" + keccak256(signature.encode("ascii")).hex()


#: ERC20 ``Transfer(address indexed from, address indexed to, uint256 value)``.
TRANSFER_TOPIC = topic("Transfer(address,address,uint256)")
#: ``PaycoreWallet.Withdrawn(address indexed token, address indexed to, uint256 amount, fee)``.
WITHDRAWN_TOPIC = topic("Withdrawn(address,address,uint256,uint256)")
#: ``PaycoreWallet.Collected(uint256 indexed index, address indexed forwarder,
#: address indexed token, uint256 amount)``: a sweep, which is not a deposit.
COLLECTED_TOPIC = topic("Collected(uint256,address,address,uint256)")

DEPLOY_WALLET = "deployWallet(address)"
WITHDRAW = "withdraw(address,address,uint256,uint256[])"


def encode_call(signature: str, types: Sequence[str], args: Sequence[object]) -> bytes:
    """Calldata: the selector of ``signature`` followed by the ABI-encoded ``args``."""
    return selector(signature) + abi_encode(list(types), list(args))


def deploy_wallet_data(owner: str) -> bytes:
    return encode_call(DEPLOY_WALLET, ["address"], [to_checksum(owner)])


def decode_deploy_wallet(data: bytes) -> str | None:
    """The owner a ``deployWallet`` calldata deploys for, or None for any other calldata."""
    if len(data) != 36 or data[:4] != selector(DEPLOY_WALLET):
        return None
    (owner,) = abi_decode(["address"], data[4:])
    return to_checksum(owner)


def withdraw_data(token: str, to: str, amount: int, indexes: Sequence[int]) -> bytes:
    return encode_call(
        WITHDRAW,
        ["address", "address", "uint256", "uint256[]"],
        [to_checksum(token), to_checksum(to), amount, list(indexes)],
    )


def view_data(signature: str, *args: object, types: Sequence[str] = ()) -> str:
    """0x hex calldata of a view call, ready for an ``eth_call`` params object."""
    return "0x" + encode_call(signature, types, args).hex()


def topic_address(word: str) -> str:
    """The address in an indexed-address topic (32-byte word, 0x hex), checksummed."""
    return to_checksum("0x" + word[-40:])


def address_topic(address: str) -> str:
    """An address as the 32-byte topic a log filter compares against."""
    return "0x" + "0" * 24 + address.lower().removeprefix("0x")


def word_int(data: str, index: int = 0) -> int:
    """The ``index``-th 32-byte word of 0x hex ``data`` as an unsigned integer."""
    start = 2 + 64 * index
    return int(data[start : start + 64] or "0", 16)


def decode_uint(result: str) -> int:
    """An ``eth_call`` result holding one uint (``0x`` alone reads as 0: no code there)."""
    return int(result, 16) if result not in ("0x", "") else 0


def decode_string(result: str) -> str | None:
    """An ``eth_call`` result holding one ``string`` (or a ``bytes32``, as old tokens return
    their symbol); None when it is neither."""
    raw = bytes.fromhex(result.removeprefix("0x"))
    if not raw:
        return None
    if len(raw) == 32:
        return raw.rstrip(b"\0").decode("utf-8", "replace") or None
    try:
        (text,) = abi_decode(["string"], raw)
    except Exception:  # a token with an odd symbol() is still a token
        return None
    return str(text)
