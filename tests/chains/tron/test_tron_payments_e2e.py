"""Tron invoices paid end to end: POST /invoice through a transport, payments on the local
TronGrid stand-in, the watcher over real HTTP through tronpy, then the invoice, its events
and the transaction list over HTTP.

Every owner here is a Tron (base58) address whose session key was registered with a TIP-191
(TronLink) signature. The watcher is stepped by hand so each assertion sees a known chain
position; the chain needs 2 confirmations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fake_trongrid import b58
from tron_env import (
    API_KEY,
    CHAIN_ID,
    PAYER,
    TRX,
    TRX_ID,
    USD,
    USDT,
    Env,
    address_of,
    drain,
    make_gateway,
    open_env,
    watcher,
)

from paycore import NATIVE
from paycore.storage import Storage

pytestmark = pytest.mark.slow  # end to end over HTTP against the TronGrid stand-in

TRANSPORTS = ("core", "flask", "litestar")


@pytest.fixture(params=TRANSPORTS)
def env(request: pytest.FixtureRequest) -> Iterator[Env]:
    with open_env(request.param) as opened:
        yield opened


@pytest.fixture
def core_env() -> Iterator[Env]:
    with open_env("core") as opened:
        yield opened


def usdt_id() -> str:
    return f"{CHAIN_ID}:{USDT}"


def create(env: Env, session: Any, **fields: Any) -> dict[str, Any]:
    body = {"value": "10", "chainId": CHAIN_ID, "description": "order", **fields}
    body.setdefault("acceptedTokens", [usdt_id()])
    created: dict[str, Any] = env.api.post("/invoice", body, session=session).ok(201)
    return created


def read(env: Env, guid: str) -> dict[str, Any]:
    invoice: dict[str, Any] = env.api.get(f"/invoice/{guid}").ok()
    return invoice


def poll(env: Env, session: Any) -> list[tuple[str, str, str]]:
    events = env.api.post("/poll/events", session=session).ok()["events"]
    return [(e["guid"], e["status"], e["paidAmount"]) for e in events]


def test_a_trc20_invoice_paid_in_two_parts(env: Env) -> None:
    _owner, owner_t, session = env.merchant()
    invoice = create(env, session)
    assert invoice["owner"] == owner_t
    # Derived offline: index 0 of the owner's wallet, the test's own TVM CREATE2 agrees.
    assert invoice["address"] == b58(env.chain.deposit_for(owner_t, 0))
    query = f"ownerAddress={owner_t}&chainId={CHAIN_ID}&index=0"
    assert env.api.get("/getAddress", query).ok()["depositAddress"] == invoice["address"]
    w = watcher(env.gateway)
    drain(w)

    first = env.pay_usdt(invoice["address"], 4 * USD)
    env.chain.mine(2)  # the payment's block and one more: 1 confirmation of 2
    assert drain(w)[-1].deposits == 0
    assert read(env, invoice["guid"])["status"] == "init"
    env.chain.mine()
    assert sum(r.deposits for r in drain(w)) == 1
    partial = read(env, invoice["guid"])
    assert (partial["status"], partial["paidAmount"]) == ("partialPaid", "4")
    [payment] = partial["payments"]
    assert payment == {
        "txHash": first,
        "logIndex": 0,
        "chainId": str(CHAIN_ID),
        "token": USDT,
        "from": address_of(PAYER),
        "amount": "4",
        "vsValue": 4,
        "timestamp": payment["timestamp"],
    }
    assert poll(env, session) == [(invoice["guid"], "partialPaid", "4")]

    env.pay_usdt(invoice["address"], 6 * USD + USD // 2)
    env.chain.mine(3)
    drain(w)
    paid = read(env, invoice["guid"])
    assert (paid["status"], paid["paidAmount"]) == ("paid", "10.5")
    assert poll(env, session) == [(invoice["guid"], "paid", "10.5")]
    assert sum(r.deposits for r in drain(w)) == 0  # nothing new, nothing twice

    query = f"owner={owner_t}&chainId={CHAIN_ID}"
    items = env.api.get("/transactions", query, session=session).ok()["items"]
    assert sorted((t["type"], t["amount"], t["guid"]) for t in items) == [
        ("deposit", "4", invoice["guid"]),
        ("deposit", "6.5", invoice["guid"]),
    ]
    history = env.api.post(
        "/history", {"ownerAddress": owner_t, "chainId": CHAIN_ID}, session=session
    ).ok()
    assert {h["txHash"] for h in history} == {t["txHash"] for t in items}
    # The backend sent the operator's TronGrid key with every request, and nothing else.
    assert env.chain.requests
    assert all(headers.get("TRON-PRO-API-KEY") == API_KEY for _p, headers, _b in env.chain.requests)


def test_a_trx_invoice(core_env: Env) -> None:
    env = core_env
    _owner, _owner_t, session = env.merchant()
    invoice = create(env, session, value="5", acceptedTokens=[TRX_ID])  # 20 TRX at 0.25
    w = watcher(env.gateway)
    drain(w)
    env.pay_trx(invoice["address"], 7 * TRX, success=False)  # failed: not a payment
    env.pay_trx(invoice["address"], 0)  # nothing moved
    tx = env.pay_trx(invoice["address"], 20 * TRX)
    env.chain.mine(3)
    assert sum(r.deposits for r in drain(w)) == 1
    paid = read(env, invoice["guid"])
    assert (paid["status"], paid["paidAmount"]) == ("paid", "5")
    [payment] = paid["payments"]
    assert (payment["txHash"], payment["logIndex"], payment["token"], payment["amount"]) == (
        tx,
        -1,
        NATIVE,
        "20",
    )
    assert payment["from"] == address_of(PAYER)


def test_a_token_transfer_made_inside_another_contract_counts(core_env: Env) -> None:
    """A batch sender's internal ``transfer`` logs the token's event: it is seen by log,
    not by the transaction's top-level contract."""
    env = core_env
    _owner, _owner_t, session = env.merchant()
    invoice = create(env, session)
    w = watcher(env.gateway)
    drain(w)
    batcher = b58("77" * 20)
    env.chain.send_trc20(USDT, address_of(PAYER), invoice["address"], 10 * USD, via=batcher)
    env.chain.mine(3)
    drain(w)
    assert read(env, invoice["guid"])["status"] == "paid"


def test_a_restarted_watcher_counts_nothing_twice(
    core_env: Env, dies_in_batch: Callable[[Storage, int], Storage]
) -> None:
    env = core_env
    _owner, _owner_t, session = env.merchant()
    invoice = create(env, session, value="9")
    first_watcher = watcher(env.gateway)
    drain(first_watcher)
    for units in (2, 3, 4):
        env.pay_usdt(invoice["address"], units * USD)
        env.chain.mine()
    env.chain.mine(2)

    # Two deposits per batch; the process dies inside the second batch, before its commit.
    storage = dies_in_batch(env.gateway.storage, 2)
    start = env.gateway.settings.chains[CHAIN_ID].start_block
    dying = make_gateway(env.url, env.chain, storage=storage, ingest_batch=2, start_block=start)
    crashing = watcher(dying, holder="crashing")
    first_watcher.release()
    with pytest.raises(RuntimeError, match="killed in batch 2"):
        crashing.step()
    assert read(env, invoice["guid"])["paidAmount"] == "5"  # two of three, cursor not moved
    crashing.release()

    successor = watcher(env.gateway, holder="successor")
    drain(successor)
    done = read(env, invoice["guid"])
    assert (done["status"], done["paidAmount"]) == ("paid", "9")
    assert len(done["payments"]) == 3
    events = poll(env, session)
    assert [status for _g, status, _a in events] == ["partialPaid", "paid"]  # status changes
    # A third watcher on the same storage starts from the stored cursor: nothing again.
    successor.release()
    assert sum(r.deposits for r in drain(watcher(env.gateway, holder="third"))) == 0


def test_a_fork_before_confirmation_never_counts_the_vanished_payment(core_env: Env) -> None:
    env = core_env
    _owner, _owner_t, session = env.merchant()
    invoice = create(env, session)
    w = watcher(env.gateway)
    drain(w)
    env.pay_usdt(invoice["address"], 4 * USD)
    env.chain.mine(2)  # one confirmation short
    assert sum(r.deposits for r in drain(w)) == 0
    # Both blocks are replaced; the replacement chain carries another payment instead.
    replacement = env.chain.send_trc20(USDT, address_of(PAYER), invoice["address"], 3 * USD)
    env.chain.fork(2, [env.chain.pending.pop()])
    env.chain.mine(2)
    assert sum(r.deposits for r in drain(w)) == 1
    after = read(env, invoice["guid"])
    assert after["paidAmount"] == "3"
    assert [p["txHash"] for p in after["payments"]] == [replacement]


def test_a_fork_below_the_cursor_rewinds_and_counts_once(core_env: Env) -> None:
    """Deeper than ``confirmations``: the next range does not descend from the cursor's
    block, so the watcher rewinds; the payment re-included in the new chain counts once."""
    env = core_env
    _owner, _owner_t, session = env.merchant()
    invoice = create(env, session)
    w = watcher(env.gateway)
    drain(w)
    env.pay_usdt(invoice["address"], 4 * USD)
    env.chain.mine(3)
    drain(w)
    assert read(env, invoice["guid"])["paidAmount"] == "4"
    dropped = env.chain.fork(3)
    env.chain.fork(1, dropped)  # the same transaction, in another block
    env.chain.mine(3)
    reports = drain(w)
    assert any(r.rewound_to is not None for r in reports)
    again = read(env, invoice["guid"])
    assert (again["status"], again["paidAmount"]) == ("partialPaid", "4")
    assert len(again["payments"]) == 1


def test_a_range_read_across_a_fork_is_retried(core_env: Env) -> None:
    """Transaction infos of another block than the one read: the range is not attributed."""
    env = core_env
    _owner, _owner_t, session = env.merchant()
    invoice = create(env, session)
    w = watcher(env.gateway)
    drain(w)
    env.pay_usdt(invoice["address"], 10 * USD)
    env.chain.mine(3)
    real_answer = env.chain.answer

    def moved(path: str, body: dict[str, Any]) -> Any:
        if path == "/wallet/gettransactioninfobyblocknum":
            # The node switched forks between the two reads: the other block's infos.
            return [{"id": "ee" * 32, "blockNumber": body["num"], "receipt": {"net_usage": 9}}]
        return real_answer(path, body)

    env.chain.answer = moved  # type: ignore[method-assign]
    report = w.step()
    assert report.error and not report.caught_up and report.deposits == 0
    env.chain.answer = real_answer  # type: ignore[method-assign]
    drain(w)
    assert read(env, invoice["guid"])["status"] == "paid"


def test_a_payment_to_a_deposit_address_of_an_evm_owner(core_env: Env) -> None:
    """A merchant whose wallet is an EVM key takes Tron payments too: same key, base58."""
    from conf_keys import SessionKey
    from eth_account import Account

    env = core_env
    evm_owner = Account.create()
    session = SessionKey(Account.create())
    env.api.registered(evm_owner, session)
    invoice = create(env, session, value="1")
    assert invoice["address"].startswith("T")
    assert invoice["address"] == b58(env.chain.deposit_for(evm_owner.address, 0))
    w = watcher(env.gateway)
    drain(w)
    env.pay_usdt(invoice["address"], 1 * USD)
    env.chain.mine(3)
    drain(w)
    assert read(env, invoice["guid"])["status"] == "paid"


def test_the_watcher_loop_runs_and_stops(core_env: Env) -> None:
    import threading

    env = core_env
    _owner, _owner_t, session = env.merchant()
    invoice = create(env, session)
    env.pay_usdt(invoice["address"], 10 * USD)
    env.chain.mine(3)
    stop = threading.Event()
    thread = threading.Thread(
        target=backend_watch, args=(env, stop), name="tron-watch-test", daemon=True
    )
    thread.start()
    try:
        for _ in range(200):
            if read(env, invoice["guid"])["status"] == "paid":
                break
            stop.wait(0.05)
    finally:
        stop.set()
        thread.join(10)
    assert read(env, invoice["guid"])["status"] == "paid"
    assert not thread.is_alive()


def backend_watch(env: Env, stop: Any) -> None:
    env.gateway.chains[CHAIN_ID].watch(env.gateway, stop)  # type: ignore[attr-defined]


def test_tronlink_owner_signatures_over_http(env: Env) -> None:
    """TIP-191 wherever the interface takes an owner signature; a wrong signer is still a 401."""
    from conf_keys import public_key_of
    from eth_account import Account
    from tron_env import key, tronlink_sign

    from paycore.auth import get_webhook_message, poll_register_message

    owner = key("signer")
    owner_t = address_of(owner)
    session_key = Account.create()
    public_key = public_key_of(session_key)
    forged = {
        "ownerAddress": owner_t,
        "publicKey": public_key,
        "signature": tronlink_sign(key("mallory"), public_key),
    }
    assert env.api.post("/auth/register-pubkey", forged).error(401).startswith("wallet signature:")
    good = {**forged, "signature": tronlink_sign(owner, public_key)}
    assert env.api.post("/auth/register-pubkey", good).ok()["ownerAddress"] == owner_t

    text = get_webhook_message(owner_t)
    assert text == f"get-webhook:{owner_t.lower()}"  # the owner address, lowercased
    got = env.api.post(
        "/webhook/get", {"ownerAddress": owner_t, "signature": tronlink_sign(owner, text)}
    ).ok()
    assert (got["ownerAddress"], got["url"]) == (owner_t, "")
    registered = env.api.post(
        "/poll/register",
        {
            "ownerAddress": owner_t,
            "signature": tronlink_sign(owner, poll_register_message(owner_t)),
        },
    ).ok()
    assert registered["ownerAddress"] == owner_t and registered["token"]
