"""GET /invoice/{guid}: public read, 404 text, lazy expiry, optional session headers."""

from __future__ import annotations

import uuid

from conf_env import Env, MakeEnv
from conf_keys import session


def test_public_read_returns_the_created_record(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    created = env.create(key, data={"sku": "A-1"})
    read = env.api.get(f"/invoice/{created['guid']}").ok()
    assert read == created


def test_unknown_guid_is_a_404_with_the_spec_text(env: Env) -> None:
    guid = str(uuid.uuid4())
    env.api.get(f"/invoice/{guid}").error(404, f"invoice {guid} not found")


def test_lazy_expiry_on_read_emits_exactly_one_event(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    created = env.create(key, deadlineSecs=60)
    guid = created["guid"]
    env.clock.advance(60)  # at the deadline it has not passed yet
    assert env.api.get(f"/invoice/{guid}").ok()["status"] == "init"
    assert env.poll(key) == []
    env.clock.advance(1)
    first = env.api.get(f"/invoice/{guid}").ok()
    assert first["status"] == "expired"
    again = env.api.get(f"/invoice/{guid}").ok()
    assert again == first
    events = env.poll(key)
    assert [e["guid"] for e in events] == [guid]
    assert events[0]["status"] == "expired"
    assert env.poll(key) == []


def test_paid_invoice_does_not_expire(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    created = env.create(key, deadlineSecs=60, value="20")
    env.deposit(created["address"], "0.01")  # 0.01 ETH at 2000 = 20 usd
    env.poll(key)
    env.clock.advance(3600)
    assert env.api.get(f"/invoice/{created['guid']}").ok()["status"] == "paid"
    assert env.poll(key) == []


def test_read_with_valid_session_headers(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    created = env.create(key)
    read = env.api.get(f"/invoice/{created['guid']}", session=key, headers={"x-encryption": "none"})
    assert read.ok() == created


def test_read_with_headers_that_do_not_validate_is_a_401(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    guid = env.create(key)["guid"]
    stranger = session("never-registered")
    env.api.get(f"/invoice/{guid}", session=stranger).error(401, prefix="session signature: ")
    env.api.get(f"/invoice/{guid}", session=key, sign_uri=f"/paycore/invoice/{guid}x").error(
        401, prefix="session signature: "
    )
    env.api.get(f"/invoice/{guid}", headers={"x-session-nonce": "5"}).error(
        401, prefix="session signature: "
    )


def test_read_with_headers_in_soft_mode_must_validate_too(make_env: MakeEnv) -> None:
    env = make_env(auth_mode="soft")
    _, [key] = env.merchant("m", "k")
    guid = env.create(key)["guid"]
    env.api.get(f"/invoice/{guid}", session=session("never-registered")).error(
        401, prefix="session signature: "
    )


def test_an_unchanged_invoice_answers_304_to_its_etag(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    guid = env.create(key)["guid"]
    first = env.api.get(f"/invoice/{guid}")
    etag = first.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"') and len(etag) > 2
    assert first.headers["cache-control"] == "no-cache"
    again = env.api.get(f"/invoice/{guid}", headers={"if-none-match": etag})
    assert again.status == 304
    assert again.body == b""
    assert again.headers["etag"] == etag
    # A list naming it, a weak copy of it, and "*" name it too; another tag does not.
    for named in (f'"x", {etag}', f"W/{etag}", "*"):
        assert env.api.get(f"/invoice/{guid}", headers={"if-none-match": named}).status == 304
    other = env.api.get(f"/invoice/{guid}", headers={"if-none-match": '"not-it"'})
    assert other.ok() == first.ok()
    assert other.headers["etag"] == etag


def test_a_change_changes_the_etag_and_answers_the_new_record(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    created = env.create(key, value="20")
    guid = created["guid"]
    etag = env.api.get(f"/invoice/{guid}").headers["etag"]
    env.deposit(created["address"], "0.005")  # half of it: partially paid
    changed = env.api.get(f"/invoice/{guid}", headers={"if-none-match": etag})
    assert changed.ok()["status"] == "partialPaid"
    assert changed.headers["etag"] != etag
    assert changed.ok()["paidAmount"] != created["paidAmount"]


def test_lazy_expiry_happens_on_a_conditional_read_too(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    guid = env.create(key, deadlineSecs=60)["guid"]
    etag = env.api.get(f"/invoice/{guid}").headers["etag"]
    env.clock.advance(61)
    expired = env.api.get(f"/invoice/{guid}", headers={"if-none-match": etag})
    assert expired.ok()["status"] == "expired"
    new_etag = expired.headers["etag"]
    assert new_etag != etag
    assert env.api.get(f"/invoice/{guid}", headers={"if-none-match": new_etag}).status == 304
    events = env.poll(key)
    assert [(e["guid"], e["status"]) for e in events] == [(guid, "expired")]


def test_a_signed_read_carries_the_same_etag(env: Env) -> None:
    _, [key] = env.merchant("m", "k")
    guid = env.create(key)["guid"]
    public = env.api.get(f"/invoice/{guid}").headers["etag"]
    signed = env.api.get(f"/invoice/{guid}", session=key, headers={"x-encryption": "none"})
    assert signed.headers["etag"] == public


def test_a_signed_read_spends_its_nonce_and_reads_in_one_call(env: Env) -> None:
    """A signed read's nonce is spent with the read (``Storage.spend_nonce_then_read``):
    the answer and its ETag are the public read's, a replay is the same 401 as ever, an
    unknown guid is a 404 whose nonce stays spent, and a due invoice is expired on the
    way (one event), as on the public read. (The SQL stores' own statement is held to
    the two calls' behaviour by the storage contract, ``storage_contract_reads``.)"""
    _, [key] = env.merchant("m", "k")
    guid = env.create(key, deadlineSecs=60)["guid"]
    public = env.api.get(f"/invoice/{guid}")
    plain = {"x-encryption": "none"}
    nonce = key.next_nonce()
    signed = env.api.get(f"/invoice/{guid}", session=key, nonce=nonce, headers=plain)
    assert signed.ok() == public.ok()
    assert signed.headers["etag"] == public.headers["etag"]
    replayed = env.api.get(f"/invoice/{guid}", session=key, nonce=nonce, headers=plain)
    replay = "session signature: this nonce was already accepted for this request (a replay)"
    replayed.error(401, replay)
    unknown = str(uuid.uuid4())
    nonce = key.next_nonce()
    missing = env.api.get(f"/invoice/{unknown}", session=key, nonce=nonce, headers=plain)
    missing.error(404, f"invoice {unknown} not found")
    again = env.api.get(f"/invoice/{unknown}", session=key, nonce=nonce, headers=plain)
    again.error(401, replay)
    env.clock.advance(61)
    expired = env.api.get(f"/invoice/{guid}", session=key, headers=plain).ok()
    assert expired["status"] == "expired"
    assert env.api.get(f"/invoice/{guid}").ok() == expired
    events = env.poll(key)
    assert [(e["guid"], e["status"]) for e in events] == [(guid, "expired")]
