"""The story ``paycore demo`` tells, one numbered step at a time: a shop adds paycore, a
merchant signs in with a session key, a buyer pays an invoice in two token transfers, the
merchant hears of it by polling and by signed webhook, then takes the money out of its
non-custodial wallet. Every call a merchant would make goes over HTTP to the running shop;
every transaction is signed on this side and only relayed by paycore.

Each step is a function of the shared :class:`Story`; ``STEPS`` fixes their order and
count, so the progress display knows the total before the first one runs.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from eth_account import Account
from eth_account.signers.local import LocalAccount

from paycore import ChainConfig, Settings

from . import chain as devchain
from .client import Api, SessionKey, fetch, sign_text
from .errors import DemoError
from .progress import Progress
from .receiver import WebhookReceiver
from .shop import ShopServer, create_shop
from .teardown import Teardown

CHAIN_ID = devchain.CHAIN_ID
INVOICE_USD = "10"
TOKEN_PRICE = "1"  # USD per USDT
PAYMENTS = (4, 6)  # whole USDT per transfer: the first leaves the invoice partly paid
EVENT_TIMEOUT = 20.0
POLL_EVERY = 0.2
UNSIGNED_FIELDS = ("to", "data", "gas", "gasPrice", "nonce", "value", "chainId")


@dataclass
class Story:
    """What the steps share; each step fills in what the later ones need."""

    progress: Progress
    teardown: Teardown
    anvil_path: str | None
    workdir: Path | None = None
    chain: devchain.DevChain | None = None
    deployment: devchain.Deployment | None = None
    receiver: WebhookReceiver | None = None
    api: Api | None = None
    shop_url: str = ""
    worker_failed: list[BaseException] = field(default_factory=list)
    buyer: LocalAccount = field(default_factory=lambda: devchain.dev_account(3))
    owner: LocalAccount = field(default_factory=Account.create)
    session: SessionKey = field(default_factory=SessionKey)
    invoice: dict[str, Any] = field(default_factory=dict)
    recipient: str = ""  # where the withdrawal goes: a fresh address, so its balance is ours

    # Accessors that say which step should have run, instead of an AttributeError on None.
    @property
    def http(self) -> Api:
        assert self.api is not None, "the shop step runs first"
        return self.api

    @property
    def deployed(self) -> devchain.Deployment:
        assert self.deployment is not None, "the contracts step runs first"
        return self.deployment

    @property
    def token_id(self) -> str:
        return f"{CHAIN_ID}:{self.deployed.token.address}"

    def units(self, amount: int | str) -> int:
        return int(Decimal(amount) * 10**devchain.TOKEN_DECIMALS)

    def say(self, text: str) -> None:
        self.teardown.interrupts.checkpoint()
        self.progress.detail(text)


def start_chain(s: Story) -> None:
    s.progress.step("anvil", "starting a local EVM node")
    executable = devchain.find_anvil(s.anvil_path)
    s.workdir = s.teardown.acquire(
        "temp dir removed",
        lambda: Path(tempfile.mkdtemp(prefix="paycore-demo-")),
        lambda path: shutil.rmtree(path, ignore_errors=True),
    )
    anvil = devchain.start_anvil(executable, s.workdir, s.teardown)
    s.chain = devchain.DevChain(anvil.url)
    s.say(f"anvil pid {anvil.pid} at {anvil.url} (chain id {CHAIN_ID}), from {executable}")


def deploy_contracts(s: Story) -> None:
    s.progress.step("contracts", "deploying PaycoreFactory and a USDT-like token")
    assert s.chain is not None
    s.deployment = d = devchain.deploy(s.chain)
    s.say(
        f"PaycoreFactory {d.factory.address} through the deterministic CREATE2 deployer "
        "(fee 0.001 ETH per withdrawal)"
    )
    s.say(f"{devchain.TOKEN_SYMBOL} {d.token.address} (6 decimals, transfer returns nothing)")
    s.chain.transact(d.admin, d.token.functions.mint(s.buyer.address, s.units(sum(PAYMENTS))))
    s.say(f"buyer {s.buyer.address} holds {sum(PAYMENTS)} {devchain.TOKEN_SYMBOL}")


def start_shop(s: Story) -> None:
    s.progress.step("shop", "starting the Flask shop with PayCore(app), and the worker")
    assert s.chain is not None and s.workdir is not None
    d = s.deployed
    s.receiver = s.teardown.acquire(
        "receiver stopped", lambda: WebhookReceiver().start(), WebhookReceiver.stop
    )
    server = s.teardown.acquire("shop stopped", ShopServer, ShopServer.stop)
    database = s.workdir / "shop.sqlite3"
    anvil_chain = ChainConfig(
        chain_id=CHAIN_ID,
        name="anvil",
        confirmations=0,  # anvil mines each transaction at once and never reorganises
        rpc_url=s.chain.url,
        factory=d.factory.address,
        # Symbol and decimals in the entry: the page and the e-mails name the token with
        # no round trip to the chain and no per-invoice hints.
        tokens=(
            {
                "address": d.token.address,
                "symbol": devchain.TOKEN_SYMBOL,
                "decimals": devchain.TOKEN_DECIMALS,
            },
        ),
        faucet_key="0x" + bytes(devchain.dev_account(9).key).hex(),
        start_block=s.chain.block_number() + 1,
        poll_interval=POLL_EVERY,
    )
    settings = Settings(
        database_url=f"sqlite:///{database}",
        checkout_url=f"{server.url}/paycore/checkout",
        chains={CHAIN_ID: anvil_chain},
        prices={s.token_id: TOKEN_PRICE},  # a static price: 1 USDT = 1 USD
        webhook_allow_private=True,  # the receiver listens on loopback
        webhook_timeout=5.0,
        worker_poll_interval=POLL_EVERY,
    )
    app = create_shop(settings)
    from paycore_flask import state

    gateway = state(app).gateway
    server.serve(app, on_stop=gateway.close)
    s.shop_url = server.url
    s.api = Api(f"{server.url}/paycore")
    _start_worker(s, gateway)
    s.say(f"shop {server.url}/ with paycore under /paycore, storage {database}")
    s.say("worker: webhook dispatcher, expiry sweeper, chain watcher (0 confirmations)")


def _start_worker(s: Story, gateway: Any) -> None:
    """``run_worker`` on a thread, as an app embeds it; a crash is kept for the waits."""
    from paycore.runtime.worker import run_worker

    stop = threading.Event()

    def run() -> None:
        try:
            run_worker(gateway, stop_event=stop)
        except BaseException as exc:
            s.worker_failed.append(exc)

    def start() -> threading.Thread:
        thread = threading.Thread(target=run, name="demo-paycore-worker", daemon=True)
        thread.start()
        return thread

    def halt(thread: threading.Thread) -> None:
        stop.set()
        thread.join(timeout=15)

    s.teardown.acquire("worker stopped", start, halt)


def fund_owner(s: Story) -> None:
    s.progress.step("owner", "a fresh merchant wallet gets gas money from /getFaucet")
    sent = s.http.post("/getFaucet", {"chainId": CHAIN_ID, "to": s.owner.address})
    assert s.chain is not None
    s.chain.w3.eth.wait_for_transaction_receipt(sent["txHash"], timeout=30, poll_latency=0.05)
    s.say(f"owner {s.owner.address} received {sent['amount']} ETH (tx {_short(sent['txHash'])})")


def register_session(s: Story) -> None:
    s.progress.step("session", "POST /auth/register-pubkey, signed by the owner's wallet")
    key = s.session.public_key
    body = {"ownerAddress": s.owner.address, "publicKey": key, "signature": sign_text(s.owner, key)}
    answer = s.http.post("/auth/register-pubkey", body)
    s.say(f"session key {key[:12]}...{key[-6:]} registered until {_when(answer['expiresAt'])}")


def set_webhook(s: Story) -> None:
    s.progress.step("webhook", "POST /webhook/set to the merchant's local receiver")
    assert s.receiver is not None
    url = s.receiver.url
    message = f"set-webhook:{s.owner.address.lower()}:{url}"
    body = {"ownerAddress": s.owner.address, "url": url, "signature": sign_text(s.owner, message)}
    answer = s.http.post("/webhook/set", body)
    s.receiver.secret = answer["secret"]
    s.say(f"webhook {answer['url']}; signing secret {answer['secret'][:10]}... kept by receiver")


def create_invoice(s: Story) -> None:
    s.progress.step("invoice", f"POST /invoice for {INVOICE_USD} USD in USDT, no address given")
    body = {
        "value": INVOICE_USD,
        "chainId": CHAIN_ID,
        "description": "T-shirt, size M",
        "acceptedTokens": [f"{CHAIN_ID}:{devchain.TOKEN_SYMBOL}"],  # an alias of the id
        "data": {"product": "tee"},
    }
    s.invoice = s.http.post("/invoice", body, session=s.session, expect=201)
    s.say(f"invoice {s.invoice['guid']} ({s.invoice['status']})")
    token = s.invoice["tokenInfo"][s.token_id]
    amount = Decimal(INVOICE_USD) / Decimal(TOKEN_PRICE)
    s.say(
        f"checkout asks: Send {amount} {token['symbol']} "
        f"({token['decimals']} decimals, from the chain's token entry)"
    )
    s.say(f"deposit address {s.invoice['address']} (index 0 of the owner's wallet, CREATE2)")
    s.say(f"paymentUrl {s.invoice['paymentUrl']}")
    status, _page = fetch(s.invoice["paymentUrl"])
    if status != 200:
        raise DemoError(f"the payment page answered {status}")
    s.say("the payment page answers 200")


def pay(number: int) -> Callable[[Story], None]:
    """Step ``number`` of the buyer's payments, then the events it must cause."""
    amount = PAYMENTS[number - 1]
    expected = "paid" if number == len(PAYMENTS) else "partialPaid"

    def step(s: Story) -> None:
        s.progress.step(
            f"pay {number}/{len(PAYMENTS)}",
            f"buyer sends {amount} {devchain.TOKEN_SYMBOL} to the deposit address",
        )
        assert s.chain is not None
        token = s.deployed.token
        transfer = token.functions.transfer(s.invoice["address"], s.units(amount))
        receipt = s.chain.transact(s.buyer, transfer)
        tx = receipt["transactionHash"].to_0x_hex()
        s.say(f"ERC20 transfer {_short(tx)} mined in block {receipt['blockNumber']}")
        wait_for(s, expected)

    return step


def wait_for(s: Story, status: str) -> None:
    """Poll /poll/events and read the receiver until the invoice reached ``status`` on both
    channels, printing every event and delivery as it comes."""
    assert s.receiver is not None
    guid = s.invoice["guid"]
    polled = hooked = False
    deadline = time.monotonic() + EVENT_TIMEOUT
    while not (polled and hooked):
        for event in s.http.post("/poll/events", session=s.session)["events"]:
            s.progress.event("poll", _describe(event))
            polled = polled or (event["guid"], event["status"]) == (guid, status)
        for delivery in s.receiver.take():
            if not delivery.verified:
                raise DemoError(f"webhook {delivery.webhook_id} refused: {delivery.reason}")
            payload = delivery.payload or {}
            s.progress.event("webhook", f"{_describe(payload)}; signature verified")
            hooked = hooked or (payload.get("guid"), payload.get("status")) == (guid, status)
        if s.worker_failed:
            raise DemoError(f"the worker stopped: {s.worker_failed[0]}")
        if time.monotonic() > deadline:
            missing = "event" if not polled else "webhook"
            raise DemoError(f"no {status} {missing} within {EVENT_TIMEOUT:.0f} s")
        if not (polled and hooked):
            s.progress.tick(f"waiting for the {status} event")
            time.sleep(POLL_EVERY)
            s.teardown.interrupts.checkpoint()


def check_paid(s: Story) -> None:
    s.progress.step("paid", "GET /invoice/{guid} (public) and the shop's own order page")
    invoice = s.http.get(f"/invoice/{s.invoice['guid']}")
    if invoice["status"] != "paid":
        raise DemoError(f"the invoice is {invoice['status']}, not paid")
    s.say(
        f"status paid: {invoice['paidAmount']} of {invoice['value']} USD "
        f"in {len(invoice['payments'])} payments"
    )
    status, page = fetch(f"{s.shop_url}/orders/{s.invoice['guid']}")
    s.say(f"shop /orders/{s.invoice['guid'][:8]}...: {status} {page.strip()}")


def deploy_wallet(s: Story) -> None:
    s.progress.step("wallet", "/initWallet -> owner signs -> /deployWallet relays it")
    query = {"ownerAddress": s.owner.address, "chainId": CHAIN_ID}
    unsigned = s.http.post("/initWallet", query)
    signed = s.owner.sign_transaction({k: unsigned[k] for k in UNSIGNED_FIELDS})
    body = {"rawTx": "0x" + signed.raw_transaction.hex(), "chainId": CHAIN_ID}
    relayed = s.http.post("/deployWallet", body)
    assert s.chain is not None
    receipt = s.chain.w3.eth.wait_for_transaction_receipt(
        relayed["txHash"], timeout=30, poll_latency=0.05
    )
    if receipt["status"] != 1:
        raise DemoError(f"the wallet deployment {relayed['txHash']} reverted")
    s.say(f"wallet {relayed['walletAddress']} deployed (tx {_short(relayed['txHash'])})")


def withdraw(s: Story) -> None:
    s.progress.step("withdraw", "/initWithdraw -> owner signs -> broadcast to anvil")
    s.recipient = Account.create().address
    ask = {
        "to": s.recipient,
        "ownerAddress": s.owner.address,
        "tokenAddress": s.deployed.token.address,
        "amount": str(sum(PAYMENTS)),
        "chainId": CHAIN_ID,
    }
    unsigned = s.http.post("/initWithdraw", ask, session=s.session)
    s.say(
        f"unsigned withdraw of {unsigned['amount']} {devchain.TOKEN_SYMBOL} from deposit "
        f"index(es) {unsigned['indexes']}, fee {unsigned['fee']} ETH"
    )
    signed = s.owner.sign_transaction({k: unsigned[k] for k in UNSIGNED_FIELDS})
    assert s.chain is not None
    receipt = s.chain.broadcast(signed.raw_transaction)
    s.say(f"withdrawal {_short(receipt['transactionHash'].to_0x_hex())} mined")


def show_balance(s: Story) -> None:
    s.progress.step("balance", "the recipient's token balance, read from the chain")
    units = s.deployed.token.functions.balanceOf(s.recipient).call()
    amount = Decimal(units) / 10**devchain.TOKEN_DECIMALS
    if amount != sum(PAYMENTS):
        raise DemoError(f"the recipient holds {amount}, expected {sum(PAYMENTS)}")
    s.say(f"recipient {s.recipient} holds {amount.normalize():f} {devchain.TOKEN_SYMBOL}")


STEPS: tuple[Callable[[Story], None], ...] = (
    start_chain,
    deploy_contracts,
    start_shop,
    fund_owner,
    register_session,
    set_webhook,
    create_invoice,
    *(pay(n) for n in range(1, len(PAYMENTS) + 1)),
    check_paid,
    deploy_wallet,
    withdraw,
    show_balance,
)


def tell(s: Story) -> None:
    for step in STEPS:
        s.teardown.interrupts.checkpoint()
        step(s)


def _describe(invoice: dict[str, Any]) -> str:
    return (
        f"invoice {str(invoice.get('guid'))[:8]} {invoice.get('status')}: paid "
        f"{invoice.get('paidAmount')} of {invoice.get('value')} USD"
    )


def _short(tx_hash: str) -> str:
    return f"{tx_hash[:10]}..{tx_hash[-4:]}"


def _when(unix: int) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(unix))
