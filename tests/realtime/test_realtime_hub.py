"""The Hub and the socket drivers without a server: fan-in from many committing threads,
bounded queues, and the drivers' handling of a client too slow to read (which a real
loopback socket, with megabytes of buffer, would take very long to show)."""

from __future__ import annotations

import json
import threading

import anyio
from eth_account.signers.local import LocalAccount
from realtime_helpers import (
    Merchant,
    Nonces,
    account,
    make_gateway,
    register_frame,
    registration,
    wait_until,
)

from paycore import Gateway, Settings
from paycore.realtime import CLOSE_TOO_SLOW, Hub, hub_for, serve_async, serve_sync
from paycore.realtime.frames import encode_event
from paycore.storage.memory import MemoryStorage

OWNER = "0xdBB105387e6f362A7b58c1C8DD2aF3Bf16E6Bb22"


# -- the Hub -------------------------------------------------------------------------------


def test_events_go_to_the_owners_subscriptions_only_whatever_the_address_case() -> None:
    hub = Hub(queue_size=10)
    woken: list[str] = []
    mine = hub.subscribe(OWNER, lambda: woken.append("mine"))
    theirs = hub.subscribe("0x" + "11" * 20, lambda: woken.append("theirs"))
    hub.invoice_changed(OWNER.lower(), {"guid": "g1", "value": "1.5"})
    assert mine.take() == ['{"guid":"g1","value":"1.5"}'] and mine.take() == []
    assert theirs.take() == [] and woken == ["mine"]
    hub.unsubscribe(mine)
    hub.invoice_changed(OWNER, {"guid": "g2"})
    assert mine.take() == [] and hub.subscribers() == 1


def test_a_full_queue_overflows_once_and_frees_its_backlog() -> None:
    hub = Hub(queue_size=3)
    sub = hub.subscribe(OWNER, lambda: None)
    for n in range(3):
        hub.deliver(OWNER, encode_event({"n": n}))
    assert len(sub) == 3 and not sub.overflowed
    hub.deliver(OWNER, encode_event({"n": 3}))
    assert sub.overflowed and len(sub) == 0  # dropped at once, not kept
    hub.deliver(OWNER, encode_event({"n": 4}))
    assert len(sub) == 0


def test_many_committing_threads_lose_nothing_and_keep_each_threads_order() -> None:
    hub = Hub(queue_size=100_000)
    sub = hub.subscribe(OWNER, lambda: None)
    per_thread = 2000

    def commit(thread: int) -> None:
        for n in range(per_thread):
            hub.invoice_changed(OWNER, {"t": thread, "n": n})

    threads = [threading.Thread(target=commit, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    got: list[dict[str, int]] = []
    while any(t.is_alive() for t in threads) or len(sub):
        got.extend(json.loads(e) for e in sub.take())
    for t in threads:
        t.join()
    got.extend(json.loads(e) for e in sub.take())
    assert len(got) == 8 * per_thread
    for thread in range(8):
        assert [e["n"] for e in got if e["t"] == thread] == list(range(per_thread))


def test_without_sockets_or_fanout_a_change_is_not_even_encoded() -> None:
    hub = Hub()
    hub.invoice_changed(OWNER, {"not": object()})  # json.dumps would raise


def test_every_gateway_has_a_hub_and_blocking_the_builtins_does_not_lose_it() -> None:
    gateway = make_gateway()
    assert sum(isinstance(n, Hub) for n in gateway.notifiers) == 1
    assert hub_for(gateway) is hub_for(gateway)
    gateway.close()
    bare = Gateway(
        Settings(database_url="memory://", blocked_plugins=("builtins",)),
        storage=MemoryStorage(),
        entry_points=False,
    )
    assert not bare.notifiers
    assert isinstance(hub_for(bare), Hub) and bare.notifiers == (hub_for(bare),)


# -- drivers with a client that does not read ----------------------------------------------


class StuckSyncSocket:
    """Answers the challenge with a signed register frame, then blocks every push until
    ``moving`` is set: a client that stopped reading, with no buffer in between."""

    def __init__(self, key: LocalAccount) -> None:
        self.key = key
        self.challenge = ""
        self.sent: list[str] = []
        self.stuck = threading.Event()
        self.moving = threading.Event()
        self.closed: tuple[int, str] | None = None

    def send(self, text: str) -> None:
        frame = json.loads(text)
        if frame.get("type") == "challenge":
            self.challenge = frame["challenge"]
        elif "events" in frame:
            self.stuck.set()
            self.moving.wait()
        self.sent.append(text)

    def receive(self, timeout: float) -> str | None:
        if self.challenge:
            frame = register_frame(self.key, self.challenge, Nonces().next())
            self.challenge = ""
            return frame
        return None  # the client says nothing more

    def close(self, code: int, reason: str) -> None:
        self.closed = (code, reason)


class StuckAsyncSocket:
    def __init__(self, key: LocalAccount) -> None:
        self.key = key
        self.challenge = ""
        self.sent: list[str] = []
        self.stuck = anyio.Event()
        self.moving = anyio.Event()
        self.closed: tuple[int, str] | None = None

    async def send(self, text: str) -> None:
        frame = json.loads(text)
        if frame.get("type") == "challenge":
            self.challenge = frame["challenge"]
        elif "events" in frame:
            self.stuck.set()
            await self.moving.wait()
        self.sent.append(text)

    async def receive(self) -> str:
        if self.challenge:
            frame = register_frame(self.key, self.challenge, Nonces().next())
            self.challenge = ""
            return frame
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def close(self, code: int, reason: str) -> None:
        self.closed = (code, reason)


def _registered_gateway(queue_size: int) -> tuple[Gateway, LocalAccount, Merchant]:
    gateway = make_gateway(ws_queue_size=queue_size)
    owner, key = account("slow owner"), account("slow key")
    gateway.sessions.register(registration(owner, key), session=None)
    return gateway, key, Merchant(gateway, owner)


def _wait_subscribed(gateway: Gateway) -> None:
    wait_until(lambda: hub_for(gateway).subscribers() == 1, timeout=10, what="subscription")


def test_sync_driver_closes_a_client_that_falls_too_far_behind() -> None:
    gateway, key, merchant = _registered_gateway(queue_size=4)
    sock = StuckSyncSocket(key)
    runner = threading.Thread(target=serve_sync, args=(sock, gateway))
    runner.start()
    _wait_subscribed(gateway)
    merchant.pay(merchant.invoice(value="1000"), "0.0001")
    assert sock.stuck.wait(10)  # the first push is being written and does not finish
    for _ in range(5):  # meanwhile more status changes than the queue holds
        merchant.pay(merchant.invoice(value="1000"), "0.0001")
    sock.moving.set()
    runner.join(10)
    assert not runner.is_alive()
    assert sock.closed == (CLOSE_TOO_SLOW, "too slow: more than 4 events waiting")
    assert json.loads(sock.sent[-1]) == {
        "type": "error",
        "message": "too slow: more than 4 events waiting",
    }
    assert hub_for(gateway).subscribers() == 0
    gateway.close()


def test_async_driver_closes_a_client_that_falls_too_far_behind() -> None:
    gateway, key, merchant = _registered_gateway(queue_size=2)
    invoices = [merchant.invoice(value="1000") for _ in range(4)]
    sock = StuckAsyncSocket(key)

    async def main() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(serve_async, sock, gateway)
            await anyio.to_thread.run_sync(_wait_subscribed, gateway)
            await anyio.to_thread.run_sync(merchant.pay, invoices[0], "0.0001")
            await sock.stuck.wait()
            for invoice in invoices[1:]:  # a status change each
                await anyio.to_thread.run_sync(merchant.pay, invoice, "0.0001")
            sock.moving.set()

    anyio.run(main)
    assert sock.closed == (CLOSE_TOO_SLOW, "too slow: more than 2 events waiting")
    assert hub_for(gateway).subscribers() == 0
    gateway.close()
