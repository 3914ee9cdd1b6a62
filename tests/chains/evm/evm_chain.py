"""A real EVM test chain for paycore's tests: anvil from npm, web3.py, raw signed transactions.

Shared by every test that needs a chain (contracts now, the watcher and the transaction
builders later), so it knows nothing about pytest fixtures: ``tests/chains/evm/conftest.py``
wraps it.

Transactions are signed locally with eth-account and sent raw, the way a merchant's wallet
sends what paycore's ``/initWithdraw`` builds; anvil's own unlocked accounts are never used.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eth_account import Account
from eth_account.signers.local import LocalAccount
from hexbytes import HexBytes
from web3 import Web3
from web3.contract import Contract
from web3.contract.contract import ContractFunction
from web3.exceptions import ContractLogicError
from web3.types import TxParams, TxReceipt, Wei

from paycore.contracts import load_artifact
from paycore.crypto.hashing import keccak256

REPO_ROOT = Path(__file__).resolve().parents[3]
NODE_MODULES = REPO_ROOT / "node_modules"

#: anvil's default mnemonic; its accounts start with 10,000 ETH each.
ANVIL_MNEMONIC = "test test test test test test test test test test test junk"
ANVIL_CHAIN_ID = 31337
#: Generous gas for transactions expected to revert (estimation would refuse them).
REVERT_GAS = 1_000_000


def find_anvil() -> Path | None:
    """The anvil executable that ``npm ci`` installed, or None.

    package.json pins ``@foundry-rs/anvil-linux-amd64``, whose ``bin/anvil`` is the binary
    itself (linked as ``node_modules/.bin/anvil``). The ``@foundry-rs/anvil`` wrapper is not
    used: its lock entry needs platform packages the registry here does not serve. The
    ``.bin/anvil`` fallback covers another platform package or the wrapper installed by hand.
    """
    for candidate in sorted(NODE_MODULES.glob("@foundry-rs/anvil-*/bin/anvil")):
        if os.access(candidate, os.X_OK):
            return candidate
    linked = NODE_MODULES / ".bin" / "anvil"
    if linked.exists() and (linked.resolve().suffix != ".mjs" or shutil.which("node")):
        return linked
    return None


def dev_accounts(count: int = 10) -> list[LocalAccount]:
    """anvil's funded dev accounts, derived from its default mnemonic (m/44'/60'/0'/0/i)."""
    Account.enable_unaudited_hdwallet_features()
    return [
        Account.from_mnemonic(ANVIL_MNEMONIC, account_path=f"m/44'/60'/0'/0/{i}")
        for i in range(count)
    ]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class AnvilError(RuntimeError):
    """anvil did not start or answer; the message carries the tail of its log."""


@contextmanager
def run_anvil(
    executable: Path, log_path: Path, *, chain_id: int = ANVIL_CHAIN_ID, timeout: float = 30.0
) -> Iterator[str]:
    """Runs anvil on a free loopback port for the ``with`` block; yields its RPC URL.

    anvil gets its own process group and the whole group is stopped on exit, whatever
    happened inside the block, so neither the Node wrapper nor anvil outlives the tests.
    Output goes to ``log_path`` (a pipe nobody reads could fill up and stall anvil).
    """
    last_error = "never started"
    for _attempt in range(3):  # another process may grab the port between probe and bind
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                [
                    str(executable),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--chain-id",
                    str(chain_id),
                    "--mnemonic",
                    ANVIL_MNEMONIC,
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            if _wait_for_rpc(url, process, timeout):
                yield url
                return
            last_error = _log_tail(log_path)
        finally:
            _stop(process)
    raise AnvilError(f"anvil did not answer on loopback: {last_error}")


def _wait_for_rpc(url: str, process: subprocess.Popen[bytes], timeout: float) -> bool:
    w3 = Web3(Web3.HTTPProvider(url, request_kwargs={"timeout": 2}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            w3.eth.chain_id  # noqa: B018 - the call is the probe
            return True
        except Exception:  # connection refused until anvil listens
            time.sleep(0.05)
    return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, 15)
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait(timeout=10)
    except ProcessLookupError:
        pass


def _log_tail(log_path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(log_path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def error_selector(abi: Sequence[Mapping[str, Any]], name: str) -> bytes:
    """The 4-byte selector of custom error ``name`` declared in ``abi``."""
    for item in abi:
        if item.get("type") == "error" and item.get("name") == name:
            types = ",".join(_abi_type(arg) for arg in item["inputs"])
            return keccak256(f"{name}({types})".encode())[:4]
    raise KeyError(f"no error {name} in the ABI")


def _abi_type(arg: Mapping[str, Any]) -> str:
    if arg["type"].startswith("tuple"):
        inner = ",".join(_abi_type(c) for c in arg["components"])
        return f"({inner}){arg['type'][5:]}"
    return str(arg["type"])


@dataclass
class Chain:
    """A web3.py connection plus the keys that sign on it."""

    w3: Web3
    rpc_url: str
    accounts: list[LocalAccount]
    chain_id: int = ANVIL_CHAIN_ID

    # ------------------------------------------------------------- contracts

    def contract(self, name: str, address: str) -> Contract:
        """A web3 contract object of a paycore artifact at ``address``."""
        return self.w3.eth.contract(
            address=Web3.to_checksum_address(address), abi=load_artifact(name)["abi"]
        )

    def deploy(self, sender: LocalAccount, name: str, *args: Any) -> Contract:
        """Deploys artifact ``name`` with constructor ``args``, signed by ``sender``."""
        artifact = load_artifact(name)
        factory = self.w3.eth.contract(abi=artifact["abi"], bytecode=artifact["bytecode"])
        tx = factory.constructor(*args).build_transaction(self._base(sender))
        receipt = self.send_tx(sender, tx)
        address = receipt["contractAddress"]
        assert address is not None
        return self.contract(name, address)

    # ------------------------------------------------------------- transactions

    def _base(self, sender: LocalAccount, value: int = 0) -> TxParams:
        return {
            "from": sender.address,
            "chainId": self.chain_id,
            "nonce": self.w3.eth.get_transaction_count(sender.address, "pending"),
            "value": Wei(value),
        }

    def send_tx(self, sender: LocalAccount, tx: TxParams) -> TxReceipt:
        """Fills what is missing, signs with ``sender``'s key, sends raw, waits for the receipt."""
        tx = dict(tx)  # type: ignore[assignment]
        tx.setdefault("from", sender.address)
        tx.setdefault("chainId", self.chain_id)
        tx.setdefault("nonce", self.w3.eth.get_transaction_count(sender.address, "pending"))
        if "gasPrice" not in tx and "maxFeePerGas" not in tx:
            base = self.w3.eth.get_block("latest")["baseFeePerGas"]
            tx["maxPriorityFeePerGas"] = Web3.to_wei(1, "gwei")
            tx["maxFeePerGas"] = Wei(2 * base + Web3.to_wei(1, "gwei"))
        if "gas" not in tx:
            tx["gas"] = self.w3.eth.estimate_gas(tx)
        signed = sender.sign_transaction(tx)  # type: ignore[arg-type]
        tx_hash = self.w3.eth.send_raw_transaction(signed.raw_transaction)
        return self.w3.eth.wait_for_transaction_receipt(tx_hash, timeout=30)

    def transact(self, sender: LocalAccount, call: ContractFunction, value: int = 0) -> TxReceipt:
        """Sends a contract call that must succeed; returns its receipt."""
        tx = call.build_transaction(self._base(sender, value))
        receipt = self.send_tx(sender, tx)
        assert receipt["status"] == 1, f"{call.fn_name} failed: {receipt}"
        return receipt

    def send_value(self, sender: LocalAccount, to: str, value: int) -> TxReceipt:
        """A plain native transfer, as a payer's wallet sends to a deposit address."""
        receipt = self.send_tx(sender, {"to": Web3.to_checksum_address(to), "value": Wei(value)})
        assert receipt["status"] == 1
        return receipt

    def expect_revert(
        self, sender: LocalAccount, call: ContractFunction, error: str, value: int = 0
    ) -> TxReceipt:
        """Asserts ``call`` reverts with custom error ``error``, simulated and then mined.

        The eth_call names the error (a mined receipt carries no revert data); the mined
        transaction proves the revert also happens on chain, not only in simulation.
        """
        selector = error_selector(call.contract_abi, error)
        params = self._base(sender, value)
        params["to"] = call.address
        params["data"] = HexBytes(call._encode_transaction_data())
        try:
            self.w3.eth.call(params)
        except ContractLogicError as exc:
            data = exc.data if isinstance(exc.data, str) else ""
            got = HexBytes(data)[:4] if data else b""
            assert got == selector, f"{call.fn_name} reverted with {data!r}, expected {error}"
        else:
            raise AssertionError(f"{call.fn_name} did not revert, expected {error}")
        params["gas"] = REVERT_GAS
        receipt = self.send_tx(sender, params)
        assert receipt["status"] == 0, f"{call.fn_name} was mined successfully"
        return receipt

    def gas_cost(self, receipt: TxReceipt) -> int:
        """Wei the sender paid for gas on ``receipt``."""
        return int(receipt["gasUsed"]) * int(receipt["effectiveGasPrice"])

    def balance(self, address: str) -> int:
        return int(self.w3.eth.get_balance(Web3.to_checksum_address(address)))

    # ------------------------------------------------------------- state

    @contextmanager
    def isolated(self) -> Iterator[None]:
        """Rolls the chain back to where it was when the block started (evm_snapshot)."""
        snapshot = self.w3.provider.make_request("evm_snapshot", [])["result"]  # type: ignore[arg-type]
        try:
            yield
        finally:
            reverted = self.w3.provider.make_request("evm_revert", [snapshot])  # type: ignore[arg-type]
            assert reverted.get("result") is True, reverted


def connect(rpc_url: str) -> Chain:
    """A Chain on ``rpc_url`` with anvil's dev accounts as signers."""
    w3 = Web3(Web3.HTTPProvider(rpc_url, request_kwargs={"timeout": 30}))
    return Chain(w3=w3, rpc_url=rpc_url, accounts=dev_accounts(), chain_id=int(w3.eth.chain_id))


#: The operator's fee in the default deployment: 0.001 ETH per withdrawal.
DEFAULT_FEE = 10**15
#: The factory's immutable fee cap in the default deployment: 10 ETH.
DEFAULT_MAX_FEE = 10 * 10**18


@dataclass
class Deployment:
    """paycore's contracts on a test chain, with named roles among the dev accounts.

    ``admin`` (account 0) deployed the factory and the tokens; ``fee_recipient`` (account 1)
    gets the operator's fee; ``owner`` (account 2) is a merchant; ``payer`` (account 3) pays
    invoices; ``stranger`` (account 4) has no rights anywhere. Accounts 5 and up are free.
    """

    chain: Chain
    factory: Contract
    token: Contract  # 6 decimals, returns bool, like USDC
    token_no_return: Contract  # 6 decimals, transfer returns nothing, like USDT on Ethereum
    fee: int = DEFAULT_FEE
    max_fee: int = DEFAULT_MAX_FEE

    @property
    def admin(self) -> LocalAccount:
        return self.chain.accounts[0]

    @property
    def fee_recipient(self) -> LocalAccount:
        return self.chain.accounts[1]

    @property
    def owner(self) -> LocalAccount:
        return self.chain.accounts[2]

    @property
    def payer(self) -> LocalAccount:
        return self.chain.accounts[3]

    @property
    def stranger(self) -> LocalAccount:
        return self.chain.accounts[4]

    def wallet_of(self, owner: str) -> Contract:
        """``owner``'s wallet contract object (deployed or not)."""
        address = self.factory.functions.walletAddress(owner).call()
        return self.chain.contract("PaycoreWallet", address)

    def deploy_wallet(self, owner: LocalAccount | None = None) -> Contract:
        """Deploys the wallet of ``owner`` (default: the merchant), signed by that owner."""
        owner = owner or self.owner
        self.chain.transact(owner, self.factory.functions.deployWallet(owner.address))
        return self.wallet_of(owner.address)

    def mint(self, token: Contract, to: str, amount: int) -> None:
        self.chain.transact(self.admin, token.functions.mint(to, amount))


def deploy_paycore(
    chain: Chain, fee: int = DEFAULT_FEE, max_fee: int = DEFAULT_MAX_FEE
) -> Deployment:
    """Deploys the factory (fee settings set) and two 6-decimal test tokens."""
    admin, fee_recipient = chain.accounts[0], chain.accounts[1]
    factory = chain.deploy(
        admin, "PaycoreFactory", admin.address, fee_recipient.address, fee, max_fee, b"\xff"
    )
    token = chain.deploy(admin, "TestToken", "Test USD Coin", "TUSDC", 6, True)
    token_no_return = chain.deploy(admin, "TestToken", "Test Tether", "TUSDT", 6, False)
    return Deployment(
        chain=chain,
        factory=factory,
        token=token,
        token_no_return=token_no_return,
        fee=fee,
        max_fee=max_fee,
    )
