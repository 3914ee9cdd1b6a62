"""A throwaway EVM chain for the demo: anvil from npm on a free loopback port, paycore's
factory and a USDT-like token deployed on it, and the few transactions the story needs.

Everything is signed locally with eth-account and sent raw, the way a merchant's or a
buyer's wallet would; anvil's unlocked accounts are never used. anvil runs in its own
process group (a session of its own), so the terminal's Ctrl-C reaches only the demo, which
then stops the whole group itself: nothing it started can outlive it.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eth_account import Account
from eth_account.signers.local import LocalAccount
from web3 import Web3
from web3.contract import Contract
from web3.types import TxParams, TxReceipt

from paycore.chains.deploy import FactoryArgs, deploy_factory
from paycore.config import ChainConfig
from paycore.contracts import load_artifact

from .errors import DemoError
from .teardown import Teardown

CHAIN_ID = 31337
#: anvil's default mnemonic: its first accounts hold 10,000 ETH each on every start.
DEV_MNEMONIC = "test test test test test test test test test test test junk"
#: src/paycore/demo/chain.py -> the repository root of a checkout (editable install).
REPO_ROOT = Path(__file__).resolve().parents[3]
#: The operator's fee per withdrawal (0.001 ETH) and the factory's cap on it (1 ETH).
WITHDRAW_FEE = 10**15
MAX_FEE = 10**18
TOKEN_DECIMALS = 6
TOKEN_SYMBOL = "USDT"
START_TIMEOUT = 20.0
RECEIPT_TIMEOUT = 30.0


def find_anvil(explicit: str | None = None) -> Path:
    """The anvil binary: ``explicit``, else ``node_modules/.bin/anvil`` of the checkout or
    of the current directory (what ``npm ci`` installs), else the first on PATH."""
    if explicit:
        path = Path(explicit)
        if path.is_file() and os.access(path, os.X_OK):
            return path
        raise DemoError(f"--anvil {explicit}: no executable file there")
    for root in (REPO_ROOT, Path.cwd()):
        candidate = root / "node_modules" / ".bin" / "anvil"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    on_path = shutil.which("anvil")
    if on_path:
        return Path(on_path)
    raise DemoError(
        "anvil not found: run `npm ci` in the repository root (it installs "
        "@foundry-rs/anvil into node_modules), or put anvil on PATH, or pass --anvil PATH"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to anvil's whole process group, SIGKILL if it lingers; always reaped."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=5)
    except ProcessLookupError:
        process.wait(timeout=5)


@dataclass
class Anvil:
    process: subprocess.Popen[bytes]
    url: str
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid


def start_anvil(executable: Path, workdir: Path, teardown: Teardown) -> Anvil:
    """anvil on a free loopback port, answering JSON-RPC. Three tries, because another
    process may take the probed port before anvil binds it."""
    log_path = workdir / "anvil.log"
    reason = "it never started"
    for _attempt in range(3):
        port = _free_port()
        command = [
            str(executable),
            *("--host", "127.0.0.1", "--port", str(port), "--chain-id", str(CHAIN_ID)),
            *("--mnemonic", DEV_MNEMONIC),
        ]

        def spawn(command: list[str] = command) -> subprocess.Popen[bytes]:
            # A file, not a pipe: a pipe nobody reads fills up and stalls anvil.
            with open(log_path, "ab") as log:
                return subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )

        try:
            process = teardown.acquire("anvil stopped", spawn, _stop_group)
        except OSError as exc:
            raise DemoError(f"cannot run {executable}: {exc}") from None
        url = f"http://127.0.0.1:{port}"
        if _answers(url, process):
            return Anvil(process, url, log_path)
        _stop_group(process)
        reason = _last_line(log_path) or f"exit status {process.returncode}"
    raise DemoError(f"anvil did not start: {reason}")


def _answers(url: str, process: subprocess.Popen[bytes]) -> bool:
    w3 = Web3(Web3.HTTPProvider(url, request_kwargs={"timeout": 2}))
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline and process.poll() is None:
        try:
            return int(w3.eth.chain_id) == CHAIN_ID
        except Exception:  # refused until anvil listens
            time.sleep(0.05)
    return False


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return lines[-1] if lines else ""


def dev_account(index: int) -> LocalAccount:
    """anvil's funded dev account ``index`` (m/44'/60'/0'/0/index of its mnemonic)."""
    Account.enable_unaudited_hdwallet_features()
    account: LocalAccount = Account.from_mnemonic(
        DEV_MNEMONIC, account_path=f"m/44'/60'/0'/0/{index}"
    )
    return account


class DevChain:
    """web3 on the demo's anvil, with local signing."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.w3 = Web3(Web3.HTTPProvider(url, request_kwargs={"timeout": 30}))

    def contract(self, name: str, address: str) -> Contract:
        checksummed = Web3.to_checksum_address(address)
        contract: Contract = self.w3.eth.contract(
            address=checksummed, abi=load_artifact(name)["abi"]
        )
        return contract

    def deploy(self, sender: LocalAccount, name: str, *args: Any) -> Contract:
        artifact = load_artifact(name)
        factory = self.w3.eth.contract(abi=artifact["abi"], bytecode=artifact["bytecode"])
        tx = factory.constructor(*args).build_transaction(self._base(sender))
        receipt = self.send(sender, tx)
        address = receipt["contractAddress"]
        if address is None:
            raise DemoError(f"deploying {name} created no contract")
        return self.contract(name, address)

    def _base(self, sender: LocalAccount) -> TxParams:
        return {
            "from": sender.address,
            "chainId": CHAIN_ID,
            "nonce": self.w3.eth.get_transaction_count(sender.address, "pending"),
        }

    def send(self, sender: LocalAccount, tx: TxParams) -> TxReceipt:
        """Sign ``tx`` with ``sender``'s key, send it raw, wait for a successful receipt."""
        signed = sender.sign_transaction(tx)  # type: ignore[arg-type]
        return self.broadcast(signed.raw_transaction)

    def broadcast(self, raw: bytes) -> TxReceipt:
        """Send an already signed transaction; a revert is a failed step."""
        tx_hash = self.w3.eth.send_raw_transaction(raw)
        receipt = self.w3.eth.wait_for_transaction_receipt(
            tx_hash, timeout=RECEIPT_TIMEOUT, poll_latency=0.05
        )
        if receipt["status"] != 1:
            raise DemoError(f"transaction {tx_hash.to_0x_hex()} reverted")
        return receipt

    def transact(self, sender: LocalAccount, function: Any) -> TxReceipt:
        """Call a contract function as ``sender`` (web3 fills gas and fees)."""
        return self.send(sender, function.build_transaction(self._base(sender)))

    def block_number(self) -> int:
        return int(self.w3.eth.block_number)


@dataclass
class Deployment:
    chain: DevChain
    factory: Contract
    token: Contract
    admin: LocalAccount
    fee_recipient: LocalAccount


def deploy(chain: DevChain) -> Deployment:
    """PaycoreFactory, deployed as ``paycore contracts deploy`` deploys it (through anvil's
    deterministic CREATE2 deployer, EVM prefix 0xff), and a 6-decimal token whose
    ``transfer`` returns nothing, as USDT's does on Ethereum -- the awkward case a gateway
    must handle."""
    admin, fee_recipient = dev_account(0), dev_account(1)
    args = FactoryArgs(
        admin=admin.address,
        fee_recipient=fee_recipient.address,
        fee=WITHDRAW_FEE,
        max_fee=MAX_FEE,
        prefix=0xFF,
    )
    config = ChainConfig(CHAIN_ID, "anvil", 0, chain.url)
    key = "0x" + bytes(admin.key).hex()
    deployed = deploy_factory(config, args, key=key, timeout=RECEIPT_TIMEOUT)
    factory = chain.contract("PaycoreFactory", deployed.address)
    token = chain.deploy(
        admin, "TestToken", "Tether USD (demo)", TOKEN_SYMBOL, TOKEN_DECIMALS, False
    )
    return Deployment(chain, factory, token, admin, fee_recipient)
