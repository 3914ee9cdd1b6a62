"""Deploying ``PaycoreFactory`` on an EVM chain, through the deterministic CREATE2 deployer.

Why CREATE2: a deposit address derives from the factory's address, so a factory with one
address on every chain gives a merchant one wallet address and one set of deposit addresses
on all of them. The deterministic deployment proxy at :data:`DEPLOYER` (the same bytes at
the same address on nearly every EVM chain; anvil has it from genesis) creates the contract
from ``salt ++ init code`` with CREATE2, so where it lands depends on nothing but the
salt, the factory's bytecode and its constructor arguments -- not on who sends it or their
nonce. The admin is a constructor argument (``PaycoreFactory.sol``), so it is part of that
address too: copying the deployment elsewhere cannot install another admin.

A chain without the proxy gets a plain deployment (CREATE), whose address depends on the
sender and its nonce; the operator is told. Without a key, the transaction is returned
unsigned, with gas, price and nonce filled in for the sender, for a hardware wallet.

The same run deploys ``PaycoreBatchPay`` (batch payouts, docs/payouts.md) the same way, with
the fixed :data:`BATCH_PAY_SALT`: it has no arguments, so it lands at one address on every
chain with the deployer, and a run that finds it there sends nothing for it.
"""

from __future__ import annotations

import re
import time

import rlp
from eth_account import Account

from paycore.contracts import bytecode
from paycore.crypto.hashing import keccak256
from paycore.domain.records import Json
from paycore.domain.tokens import to_checksum
from paycore.errors import InvalidInput, PaycoreError

from ..deploy import ContractDeployment, FactoryArgs, FactoryDeployment
from . import create2, txbuild
from .rpc import Rpc, RpcError, execution_failure

#: The deterministic deployment proxy: ``salt (32 bytes) ++ init code`` in, CREATE2 out.
DEPLOYER = "0x4e59b44847b379578588920cA78FbF26c0B4956C"
#: How often a sent deployment's receipt is asked for.
RECEIPT_POLL = 0.2

#: The salt ``PaycoreBatchPay`` is always deployed with (it has no constructor arguments),
#: so a second run finds it, and every chain with the deployer has it at one address.
BATCH_PAY_SALT = keccak256(b"paycore.PaycoreBatchPay")

_KEY = re.compile(r"(0x)?[0-9a-fA-F]{64}")


class DeployFailed(PaycoreError):
    """The deployment was sent but did not leave a factory on chain (reverted, or not
    mined in time)."""

    status = 502


def batch_pay_address() -> str:
    """Where the deterministic deployer puts ``PaycoreBatchPay``: one address everywhere."""
    return create2.create2_address(DEPLOYER, BATCH_PAY_SALT, keccak256(bytecode("PaycoreBatchPay")))


def factory_address(args: FactoryArgs, salt: bytes = bytes(32)) -> str:
    """Where the deterministic deployer puts a factory with ``args`` and ``salt``: the same
    address on every chain that has the deployer."""
    return create2.create2_address(DEPLOYER, salt, keccak256(args.init_code()))


def create_address(sender: str, nonce: int) -> str:
    """Where a plain deployment from ``sender`` at ``nonce`` lands:
    ``keccak256(rlp([sender, nonce]))[12:]``."""
    encoded = rlp.encode([bytes.fromhex(to_checksum(sender)[2:]), nonce])
    return to_checksum("0x" + keccak256(encoded)[12:].hex())


def account_of(key: str) -> str:
    """The address of a 32-byte hex private key; the key itself is never repeated in an
    error, which may be printed or logged."""
    if not isinstance(key, str) or not _KEY.fullmatch(key.strip()):
        raise InvalidInput("key", "not a 32-byte hex private key")
    try:
        return str(Account.from_key(key.strip()).address)
    except Exception:  # out of the curve's range
        raise InvalidInput("key", "not a valid secp256k1 private key") from None


def _has_code(code: object) -> bool:
    return isinstance(code, str) and code not in ("0x", "0x0", "")


def deploy_factory(
    rpc: Rpc,
    chain_id: int,
    args: FactoryArgs,
    *,
    key: str | None = None,
    sender: str | None = None,
    salt: bytes = bytes(32),
    create2: bool | None = None,
    timeout: float = 180.0,
) -> FactoryDeployment:
    """Deploy (with ``key``) or prepare (for ``sender``) the factory and then
    ``PaycoreBatchPay``; see ``paycore.chains.deploy.deploy_factory``."""
    if len(salt) != 32:
        raise InvalidInput("salt", "must be 32 bytes")
    if key is not None:
        signer = account_of(key)
        if sender is not None and to_checksum(sender, "from") != signer:
            raise InvalidInput("from", f"the key is {signer}'s, not {sender}'s")
        sender = signer
    assert sender is not None
    sender = to_checksum(sender, "from")
    answered = int(rpc.call("eth_chainId"), 16)
    if answered != chain_id:
        raise InvalidInput("rpc_url", f"the node answers for chain {answered}, not {chain_id}")
    has_deployer = _has_code(rpc.call("eth_getCode", [DEPLOYER, "latest"]))
    if create2 and not has_deployer:
        raise InvalidInput(
            "create2", f"chain {chain_id} has no deterministic deployer at {DEPLOYER}"
        )
    through_deployer = has_deployer and create2 is not False
    factory = _deploy(
        rpc, chain_id, args.init_code(), sender, key, salt, through_deployer, 0, timeout
    )
    # The batch contract takes no arguments and always the same salt, so it has one address
    # on every chain with the deployer. Unsigned, it is the factory's next transaction.
    batch = _deploy(
        rpc,
        chain_id,
        bytecode("PaycoreBatchPay"),
        sender,
        key,
        BATCH_PAY_SALT,
        through_deployer,
        0 if factory.unsigned is None else 1,
        timeout,
    )
    return FactoryDeployment(
        chain_id,
        factory.address,
        factory.method,
        args,
        tx_hash=factory.tx_hash,
        unsigned=factory.unsigned,
        existed=factory.existed,
        batch_pay=batch,
    )


def _deploy(
    rpc: Rpc,
    chain_id: int,
    init: bytes,
    sender: str,
    key: str | None,
    salt: bytes,
    through_deployer: bool,
    nonce_ahead: int,
    timeout: float,
) -> ContractDeployment:
    """One contract's deployment: found already there (CREATE2 only), prepared unsigned
    (``nonce_ahead`` transactions after the sender's pending nonce) or sent and waited for."""
    nonce = int(rpc.call("eth_getTransactionCount", [sender, "pending"]), 16) + nonce_ahead
    if through_deployer:
        method, to, data = "create2", DEPLOYER, salt + init
        address = create2.create2_address(DEPLOYER, salt, keccak256(init))
        if _has_code(rpc.call("eth_getCode", [address, "latest"])):
            return ContractDeployment(address, method, existed=True)
    else:
        method, to, data = "create", None, init
        address = create_address(sender, nonce)
    estimate_for: dict[str, str] = {"from": sender, "data": "0x" + data.hex()}
    if to is not None:
        estimate_for["to"] = to
    try:
        gas = int(rpc.call("eth_estimateGas", [estimate_for]), 16)
    except RpcError as exc:
        reason = execution_failure(exc)
        if reason is None:
            raise
        raise InvalidInput("deployment", f"would fail: {reason}") from None
    tx = _transaction(
        chain_id, sender, to, data, txbuild.with_headroom(gas), rpc.call("eth_gasPrice"), nonce
    )
    if key is None:
        return ContractDeployment(address, method, unsigned=tx)
    cost = int(tx["gas"], 16) * int(tx["gasPrice"], 16)
    balance = int(rpc.call("eth_getBalance", [sender, "pending"]), 16)
    if balance < cost:
        raise InvalidInput(
            "key", f"{sender} holds {balance} wei; the deployment may cost up to {cost} wei"
        )
    tx_hash = _send(rpc, key, tx)
    _wait(rpc, tx_hash, address, timeout)
    return ContractDeployment(address, method, tx_hash=tx_hash)


def _transaction(
    chain_id: int, sender: str, to: str | None, data: bytes, gas: int, price: str, nonce: int
) -> Json:
    """The interface's unsigned-transaction shape (as /initWallet's): hex ``gas``,
    ``gasPrice``, ``value`` and ``data``, a number ``nonce``; no ``to`` for a plain
    deployment."""
    tx: Json = {"from": sender, "chainId": chain_id, "nonce": nonce}
    if to is not None:
        tx["to"] = to
    tx.update({"data": "0x" + data.hex(), "value": "0x0", "gas": hex(gas), "gasPrice": price})
    return tx


def _send(rpc: Rpc, key: str, tx: Json) -> str:
    fields = {k: v for k, v in tx.items() if k != "from"}
    fields["gas"] = int(fields["gas"], 16)
    fields["gasPrice"] = int(fields["gasPrice"], 16)
    fields["value"] = 0
    signed = Account.from_key(key.strip()).sign_transaction(fields)
    return str(rpc.call("eth_sendRawTransaction", ["0x" + signed.raw_transaction.hex()]))


def _wait(rpc: Rpc, tx_hash: str, address: str, timeout: float) -> None:
    """Until the receipt is in and the factory's code is at ``address``."""
    deadline = time.monotonic() + timeout
    while True:
        receipt = rpc.call("eth_getTransactionReceipt", [tx_hash])
        if receipt is not None:
            if int(receipt.get("status", "0x0"), 16) != 1:
                raise DeployFailed(f"the deployment {tx_hash} reverted")
            if not _has_code(rpc.call("eth_getCode", [address, "latest"])):
                raise DeployFailed(f"the deployment {tx_hash} left no code at {address}")
            return
        if time.monotonic() > deadline:
            raise DeployFailed(f"the deployment {tx_hash} was not mined within {timeout:.0f} s")
        time.sleep(RECEIPT_POLL)
