"""GET /invoices with filters and GET /stats (docs/interface.md, "Search and filters" and
§GET /stats): what the dashboard finds and draws, the 400s of bad filters, and a signature
that did not cover a filter."""

from __future__ import annotations

from typing import Any

from conf_api import request_uri
from conf_env import NATIVE, USDC, USDC_1, Env
from conf_keys import SessionKey

from paycore.domain.paging import Cursor

DAY = 86_400
E = "invalid request: "


def _page(env: Env, key: SessionKey, query: str) -> Any:
    return env.api.get("/invoices", query, session=key).ok()


def _guids(page: Any) -> list[str]:
    return [item["guid"] for item in page["items"]]


def _shop(env: Env) -> tuple[str, SessionKey, list[dict[str, Any]]]:
    """Five invoices on three days: two paid, one in USDC, order ids in ``data``."""
    owner, [key] = env.merchant("m", "k")
    made = []
    for i, (desc, token) in enumerate(
        [
            ("Blue mug", NATIVE),
            ("Red Mug", NATIVE),
            ("Tea", USDC),
            ("Coffee", NATIVE),
            ("Mugs x2", NATIVE),
        ]
    ):
        accepted = [USDC_1] if token == USDC else [f"1:{NATIVE}"]
        made.append(
            env.create(
                key,
                description=desc,
                acceptedTokens=accepted,
                data={"orderId": f"ORD-{1040 + i}", "n": i},
                address=f"0x{i + 1:040x}",
            )
        )
        env.clock.advance(DAY / 2)
    env.deposit(f"0x{1:040x}", "0.005")  # Blue mug paid: 10 usd at 2000
    env.deposit(f"0x{3:040x}", "10", token=USDC)  # Tea paid
    return owner.address, key, made


def test_filters_narrow_the_owners_list_newest_first(env: Env) -> None:
    owner, key, made = _shop(env)
    base = f"owner={owner}&cursor=first"
    guids = [m["guid"] for m in made]

    found = _page(env, key, f"{base}&q=ord-1043")
    assert _guids(found) == [guids[3]]
    assert (found["total"], found["totalCapped"]) == (1, False)
    assert _guids(_page(env, key, f"{base}&q=MUG")) == [guids[4], guids[1], guids[0]]
    assert _guids(_page(env, key, f"{base}&status=paid")) == [guids[2], guids[0]]
    assert _guids(_page(env, key, f"{base}&status=init,paid&q=mug")) == [
        guids[4],
        guids[1],
        guids[0],
    ]
    assert _guids(_page(env, key, f"{base}&token=1:{USDC.lower()}")) == [guids[2]]
    assert _guids(_page(env, key, f"{base}&token=1:{NATIVE}&chainId=1&status=init")) == [
        guids[4],
        guids[3],
        guids[1],
    ]
    t0 = made[0]["createdAt"]
    window = f"{base}&createdFrom={t0 + DAY // 2}&createdTo={t0 + 2 * DAY}"
    assert _guids(_page(env, key, window)) == [guids[3], guids[2], guids[1]]
    assert _guids(_page(env, key, f"{base}&q=nothing-like-this")) == []
    # An empty filter value is a filter not given: the plain page.
    assert _guids(_page(env, key, f"{base}&q=")) == guids[::-1]


def test_a_filtered_list_pages_by_cursor(env: Env) -> None:
    owner, key, made = _shop(env)
    query = f"owner={owner}&q=mug&limit=2"
    first = _page(env, key, f"{query}&cursor=first")
    assert _guids(first) == [made[4]["guid"], made[1]["guid"]] and first["total"] == 3
    second = _page(env, key, f"{query}&cursor={first['nextCursor']}")
    assert _guids(second) == [made[0]["guid"]] and second["nextCursor"] is None
    back = _page(env, key, f"{query}&cursor={second['prevCursor']}")
    assert _guids(back) == _guids(first)


def test_another_owners_invoices_are_never_found(env: Env) -> None:
    owner, key, made = _shop(env)
    other, [theirs] = env.merchant("other", "k")
    env.create(theirs, description="Blue mug", data={"orderId": "ORD-1040"})
    found = _page(env, key, f"owner={owner}&cursor=first&q=ord-1040")
    assert _guids(found) == [made[0]["guid"]]
    # Their invoice is no position in my list, and a 400 tells nothing about it.
    theirs_found = _page(env, theirs, f"owner={other.address}&cursor=first&q=mug")
    [their_guid] = _guids(theirs_found)
    position = Cursor("invoices", "older", their_guid, 0).encode()
    env.api.get("/invoices", f"owner={owner}&q=mug&cursor={position}", session=key).error(
        400, E + "cursor: no such position in this invoices list"
    )


def test_bad_filters_are_400_with_one_line(env: Env) -> None:
    owner, key, _ = _shop(env)
    base = f"owner={owner}&cursor=first"
    cases = {
        f"{base}&status=done": E + "status: unknown status 'done'",
        f"{base}&q=ab": E + "q: at least 3 characters",
        f"{base}&q=mug%0Aord": E + "q: one line of printable text",
        f"{base}&q={'x' * 101}": None,
        f"{base}&createdFrom=200&createdTo=100": E + "createdTo: must be after createdFrom",
        f"{base}&createdFrom=soon": None,
        f"{base}&token=1:0x{'12' * 20}": None,
        f"{base}&token=137:{NATIVE}&chainId=1": E + "token: is on chain 137, not chainId 1",
        f"{base}&token=bogus": None,
        f"{base}&chainId=999&status=paid": None,
        f"owner={owner}&status=paid": E + "cursor: required with filters (cursor=first begins)",
        f"owner={owner}&status=paid&offset=0": E + "offset: not allowed with filters (use cursor)",
    }
    for query, text in cases.items():
        env.api.get("/invoices", query, session=key).error(400, text)
    env.api.get("/invoices", f"address={NATIVE[:-1]}1&chainId=1&cursor=first&status=paid").error(
        400, E + "status: filters need owner, not address"
    )


def test_a_signature_that_did_not_cover_a_filter_is_refused(env: Env) -> None:
    owner, key, _ = _shop(env)
    signed = f"owner={owner}&cursor=first"
    sent = f"{signed}&status=paid"
    answer = env.api.get("/invoices", sent, session=key, sign_uri=request_uri("/invoices", signed))
    assert answer.status == 401, answer.body


def test_stats_per_day_by_token_and_status(env: Env) -> None:
    owner, key, made = _shop(env)
    t0 = made[0]["createdAt"]
    start = t0 - t0 % DAY
    stats = env.api.get(
        "/stats", f"owner={owner}&from={start}&to={start + 3 * DAY}", session=key
    ).ok()
    assert stats["currency"] == "usd" and stats["revenue"] == "20"
    assert [d["start"] for d in stats["days"]] == [start, start + DAY, start + 2 * DAY]
    expected_days = {}
    for m in made:
        day = (m["createdAt"] - start) // DAY
        expected_days.setdefault(day, 0)
        expected_days[day] += 1
    assert [d["invoices"] for d in stats["days"]] == [expected_days.get(i, 0) for i in range(3)]
    assert sum(int(d["paid"]) for d in stats["days"]) == 2
    assert stats["days"][0]["revenue"] == "10"  # the Blue mug, day 0
    by_token = {(t["chainId"], t["token"]): t for t in stats["byToken"]}
    assert (
        by_token[(1, USDC_1)]["revenue"] == "10" and by_token[(1, f"1:{NATIVE}")]["invoices"] == 4
    )
    assert stats["byStatus"] == {"init": 3, "partialPaid": 0, "paid": 2, "expired": 0}
    only_first_day = env.api.get(
        "/stats", f"owner={owner}&from={start}&to={start + DAY}&tzOffset=-60", session=key
    ).ok()
    assert len(only_first_day["days"]) == 2  # the range's day seen from UTC-1 spans two


def test_stats_refuses_bad_ranges_and_currencies(env: Env) -> None:
    owner, key, _ = _shop(env)
    cases = {
        f"owner={owner}&from=100&to=100": E + "to: must be after from",
        f"owner={owner}&from=0&to={367 * DAY}": E + "to: at most 366 days after from",
        f"owner={owner}&from=0&to=10&currency=xyz": E
        + "currency: not a configured currency: 'xyz'",
        f"owner={owner}&from=0&to=10&tzOffset=900": E + "tzOffset: between -840 and 840",
        f"owner={owner}&from=0&to=10&tzOffset=1h": None,
        f"owner={owner}&to=10": None,
    }
    for query, text in cases.items():
        env.api.get("/stats", query, session=key).error(400, text)
