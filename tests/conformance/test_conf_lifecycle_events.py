"""Which changes reach the poll queue (docs/interface.md §Invoice lifecycle, §Events): one
event per status change, as docs/interface.md §Events says; a payment that changes no status is
recorded (the invoice shows it) but queues no second record of the same status."""

from __future__ import annotations

from conf_env import Env, MakeEnv, deposit_address
from conf_keys import SessionKey


def _statuses(env: Env, key: SessionKey) -> list[tuple[str, str, int]]:
    return [(e["status"], e["paidAmount"], len(e["payments"])) for e in env.poll(key)]


def test_each_status_change_is_one_event_a_further_part_payment_none(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    invoice = env.create(key, value="6000")
    env.deposit(invoice["address"], "1")
    env.deposit(invoice["address"], "1")  # partialPaid -> partialPaid: no status change
    read = env.api.get(f"/invoice/{invoice['guid']}").ok()
    assert (read["status"], read["paidAmount"], len(read["payments"])) == ("partialPaid", "4000", 2)
    env.deposit(invoice["address"], "1")
    assert _statuses(env, key) == [("partialPaid", "2000", 1), ("paid", "6000", 3)]


def test_overpayment_is_recorded_status_stays_paid_and_no_second_paid_event(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    invoice = env.create(key, value="2000")
    env.deposit(invoice["address"], "1")
    env.deposit(invoice["address"], "0.5")
    assert _statuses(env, key) == [("paid", "2000", 1)]
    read = env.api.get(f"/invoice/{invoice['guid']}").ok()
    assert (read["status"], read["paidAmount"], len(read["payments"])) == ("paid", "3000", 2)


def test_same_deposit_twice_is_one_payment_and_one_event(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    invoice = env.create(key, value="2000")
    env.deposit(invoice["address"], "0.5")
    env.deposit(invoice["address"], "0.5", again=True)  # the watcher sees it again
    assert _statuses(env, key) == [("partialPaid", "1000", 1)]
    read = env.api.get(f"/invoice/{invoice['guid']}").ok()
    assert (read["paidAmount"], len(read["payments"])) == ("1000", 1)


def test_tip_jar_is_paid_by_the_first_accepted_deposit(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    invoice = env.create(key, value="0")
    assert invoice["value"] == "0"
    env.deposit(invoice["address"], "0.001")
    assert _statuses(env, key) == [("paid", "2", 1)]


def test_part_paid_invoice_expires_on_read_once(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    invoice = env.create(key, value="4000", deadlineSecs=100)
    env.deposit(invoice["address"], "1")
    env.poll(key)
    env.clock.advance(101)
    read = env.api.get(f"/invoice/{invoice['guid']}").ok()
    assert (read["status"], read["paidAmount"]) == ("expired", "2000")
    env.api.get(f"/invoice/{invoice['guid']}").ok()
    assert _statuses(env, key) == [("expired", "2000", 1)]


def test_late_payment_on_expired_invoice_is_recorded_status_stays_expired(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    invoice = env.create(key, value="2000", deadlineSecs=100)
    env.clock.advance(101)
    assert env.api.get(f"/invoice/{invoice['guid']}").ok()["status"] == "expired"
    env.deposit(invoice["address"], "1")
    assert _statuses(env, key) == [("expired", "0", 0)]  # the late payment is no status change
    read = env.api.get(f"/invoice/{invoice['guid']}").ok()
    assert (read["status"], read["paidAmount"]) == ("expired", "2000")


def test_retention_cap_drops_the_oldest_events(make_env: MakeEnv) -> None:
    env = make_env(event_retention=2)
    _, [key] = env.merchant("m", "k")
    guids = []
    for i in range(3):
        invoice = env.create(key, value="2000", address=deposit_address(f"retention-{i}"))
        guids.append(invoice["guid"])
        env.deposit(invoice["address"], "1")
    assert [e["guid"] for e in env.poll(key)] == guids[1:]


def test_key_registered_later_sees_only_later_events(env: Env) -> None:
    owner, [early] = env.merchant("m", "early")
    invoice = env.create(early, value="4000")
    env.deposit(invoice["address"], "1")
    _, [late] = env.merchant("m", "late")
    env.deposit(invoice["address"], "1")
    assert [e["status"] for e in env.poll(early)] == ["partialPaid", "paid"]
    assert [e["status"] for e in env.poll(late)] == ["paid"]
