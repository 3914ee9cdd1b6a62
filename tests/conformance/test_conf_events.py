"""POST /poll/events with session keys and with legacy tokens (docs/interface.md §Events)."""

from __future__ import annotations

from typing import Any

from conf_env import Env, MakeEnv
from conf_keys import account, sign_text
from eth_account.signers.local import LocalAccount


def test_poll_drains_full_invoice_records_once(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    invoice = env.create(key, value="4000")
    assert env.poll(key) == []
    env.deposit(invoice["address"], "1")  # 2000 of 4000
    env.deposit(invoice["address"], "1")  # paid
    answer = env.api.post("/poll/events", session=key).ok()
    assert set(answer) == {"ownerAddress", "events"}
    assert answer["ownerAddress"] == owner.address
    events = answer["events"]
    assert [(e["guid"], e["status"], e["paidAmount"]) for e in events] == [
        (invoice["guid"], "partialPaid", "2000"),
        (invoice["guid"], "paid", "4000"),
    ]
    assert events[-1] == env.api.get(f"/invoice/{invoice['guid']}").ok()
    assert len(events[0]["payments"]) == 1 and len(events[1]["payments"]) == 2
    assert env.poll(key) == []


def test_poll_signature_covers_the_empty_body(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    # a signature over the URI (as for a GET) does not authenticate a POST
    headers = key.headers_for(b"/paycore/poll/events")
    env.api.post("/poll/events", headers=headers).error(401, prefix="session signature: ")
    headers = key.headers_for(b"")
    assert env.api.post("/poll/events", headers=headers).ok()["events"] == []


def test_each_session_key_has_its_own_queue(env: Env) -> None:
    _, [first, second] = env.merchant("m", "k1", "k2")
    other, [other_key] = env.merchant("other", "k")
    invoice = env.create(first, value="2000")
    env.deposit(invoice["address"], "1")
    from_first = env.poll(first)
    assert [(e["guid"], e["status"]) for e in from_first] == [(invoice["guid"], "paid")]
    assert env.poll(first) == []
    assert env.poll(second) == from_first  # draining one key left the other's queue alone
    assert env.poll(second) == []
    assert env.poll(other_key) == []  # another owner sees nothing


def test_strict_poll_without_session_or_token_is_a_401(env: Env) -> None:
    owner, _ = env.merchant("m")
    env.api.post("/poll/events").error(401, prefix="session signature: ")
    env.api.post("/poll/events", {"ownerAddress": owner.address}).error(401)


def _poll_token(env: Env, owner: LocalAccount) -> str:
    answer = env.api.post(
        "/poll/register",
        {
            "ownerAddress": owner.address.lower(),
            "signature": sign_text(owner, f"poll-register:{owner.address.lower()}"),
        },
    ).ok()
    assert set(answer) == {"ownerAddress", "token"}
    assert answer["ownerAddress"] == owner.address
    token: str = answer["token"]
    assert token
    return token


def _legacy_poll(env: Env, owner: LocalAccount, token: str) -> list[Any]:
    answer = env.api.post("/poll/events", {"ownerAddress": owner.address, "token": token}).ok()
    assert answer["ownerAddress"] == owner.address
    events: list[Any] = answer["events"]
    return events


def test_legacy_token_poll_in_both_modes(mode_env: Env) -> None:
    env = mode_env
    owner, [key] = env.merchant("m", "k")
    token = _poll_token(env, owner)
    invoice = env.create(key, value="2000")
    env.deposit(invoice["address"], "1")
    events = _legacy_poll(env, owner, token)
    assert [(e["guid"], e["status"]) for e in events] == [(invoice["guid"], "paid")]
    assert events[0] == env.api.get(f"/invoice/{invoice['guid']}").ok()
    assert _legacy_poll(env, owner, token) == []
    # the token's queue is its own: the session key still has the event
    assert [e["status"] for e in env.poll(key)] == ["paid"]


def test_legacy_register_needs_the_owner_signature(env: Env) -> None:
    owner = account("owner:m")
    body = {
        "ownerAddress": owner.address,
        "signature": sign_text(account("mallory"), f"poll-register:{owner.address.lower()}"),
    }
    env.api.post("/poll/register", body).error(401, prefix="wallet signature: ")
    body["signature"] = sign_text(owner, f"poll-register:{owner.address}")  # not lowercase
    env.api.post("/poll/register", body).error(401, prefix="wallet signature: ")
    del body["signature"]
    env.api.post("/poll/register", body).error(400, prefix="invalid request: signature: ")


def test_legacy_poll_with_a_wrong_token_is_a_401(env: Env) -> None:
    owner, _ = env.merchant("m")
    other, _ = env.merchant("other")
    token = _poll_token(env, owner)
    env.api.post("/poll/events", {"ownerAddress": owner.address, "token": token + "0"}).error(401)
    env.api.post("/poll/events", {"ownerAddress": other.address, "token": token}).error(401)


def test_legacy_token_survives_in_soft_mode_without_headers(make_env: MakeEnv) -> None:
    env = make_env(auth_mode="soft")
    owner, [key] = env.merchant("m", "k")
    token = _poll_token(env, owner)
    invoice = env.create(key, deadlineSecs=5)
    env.clock.advance(6)
    env.api.get(f"/invoice/{invoice['guid']}").ok()
    assert [e["status"] for e in _legacy_poll(env, owner, token)] == ["expired"]


def test_key_moved_to_another_owner_does_not_see_the_old_owners_events(
    make_env: MakeEnv,
) -> None:
    env = make_env(session_key_ttl=1000)
    _, [key] = env.merchant("a", "k")
    invoice = env.create(key, value="2000", deadlineSecs=10**6)
    env.clock.advance(1000)  # A's registration is no longer honoured
    b = account("owner:b")
    # The key stays bound to A for life, so B cannot take it over...
    env.api.register_key(b, key).error(403)
    env.deposit(invoice["address"], "1")  # an event of owner A
    # ...and, expired, it reads no one's events at all.
    env.api.post("/poll/events", session=key).error(401)
