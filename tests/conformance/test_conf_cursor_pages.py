"""Keyset pages (``cursor``) of GET /invoices and GET /transactions, and the ceiling of the
unpaged GET /invoices (docs/interface.md §GET /invoices)."""

from __future__ import annotations

from typing import Any

from conf_env import Env, MakeEnv
from conf_keys import SessionKey

from paycore.domain.paging import Cursor


def _get(env: Env, key: SessionKey, path: str, query: str) -> Any:
    return env.api.get(path, query, session=key).ok()


def _walk(env: Env, key: SessionKey, path: str, query: str, start: str) -> list[dict[str, Any]]:
    """Every page from ``start`` on, following nextCursor."""
    pages = [_get(env, key, path, f"{query}&cursor={start}")]
    while pages[-1]["nextCursor"] is not None:
        pages.append(_get(env, key, path, f"{query}&cursor={pages[-1]['nextCursor']}"))
    return pages


def test_cursor_pages_walk_the_list_newest_first_in_creation_order(env: Env) -> None:
    """Seven invoices created within one second: only the creation sequence orders them.
    The keyset pages hold exactly the offset pages' items, with the same offsets."""
    owner, [key] = env.merchant("m", "k")
    made = [env.create(key, description=f"order {i}")["guid"] for i in range(7)]
    newest_first = made[::-1]
    query = f"owner={owner.address}&limit=3"

    pages = _walk(env, key, "/invoices", query, "first")
    assert [[i["guid"] for i in p["items"]] for p in pages] == [
        newest_first[0:3],
        newest_first[3:6],
        newest_first[6:],
    ]
    assert [(p["total"], p["offset"], p["limit"]) for p in pages] == [
        (7, 0, 3),
        (7, 3, 3),
        (7, 6, 3),
    ]
    assert pages[0]["prevCursor"] is None and pages[-1]["nextCursor"] is None
    for page in pages:
        by_offset = _get(env, key, "/invoices", f"{query}&offset={page['offset']}")
        assert by_offset["items"] == page["items"]
        assert set(by_offset) == {"items", "total", "offset", "limit"}

    back = _get(env, key, "/invoices", f"{query}&cursor={pages[2]['prevCursor']}")
    assert back["items"] == pages[1]["items"] and back["offset"] == 3
    back = _get(env, key, "/invoices", f"{query}&cursor={back['prevCursor']}")
    assert back["items"] == pages[0]["items"]
    assert (back["offset"], back["prevCursor"]) == (0, None)


def test_the_last_page_by_cursor_and_back_from_it(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    made = [env.create(key)["guid"] for _ in range(5)]
    query = f"owner={owner.address}&limit=2"
    last = _get(env, key, "/invoices", f"{query}&cursor=last")
    assert [i["guid"] for i in last["items"]] == [made[1], made[0]]
    assert (last["total"], last["offset"], last["nextCursor"]) == (5, 3, None)
    before = _get(env, key, "/invoices", f"{query}&cursor={last['prevCursor']}")
    assert [i["guid"] for i in before["items"]] == [made[3], made[2]]
    assert before["offset"] == 1
    first = _get(env, key, "/invoices", f"{query}&cursor={before['prevCursor']}")
    assert [i["guid"] for i in first["items"]] == [made[4]]
    assert (first["offset"], first["prevCursor"]) == (0, None)


def test_cursor_pages_of_a_deposit_address(mode_env: Env) -> None:
    env = mode_env
    _, [key] = env.merchant("m", "k")
    shared = "0x" + "ab" * 20
    made = [env.create(key, address=shared)["guid"] for _ in range(3)]
    env.create(key)
    pages = [
        env.api.get("/invoices", f"address={shared}&chainId=1&limit=2&cursor=first").ok(),
    ]
    pages.append(
        env.api.get(
            "/invoices", f"address={shared}&chainId=1&limit=2&cursor={pages[0]['nextCursor']}"
        ).ok()
    )
    assert [[i["guid"] for i in p["items"]] for p in pages] == [made[:0:-1], made[:1]]
    assert pages[0]["total"] == 3 and pages[1]["nextCursor"] is None


def test_transaction_cursor_pages_match_offset_pages(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    invoice = env.create(key, value="1000000")
    for _ in range(5):
        env.deposit(invoice["address"], "0.1")  # all in the same second
    query = f"owner={owner.address}&limit=2"
    pages = _walk(env, key, "/transactions", query, "first")
    assert [len(p["items"]) for p in pages] == [2, 2, 1]
    everything = _get(env, key, "/transactions", f"owner={owner.address}")["items"]
    assert [i for p in pages for i in p["items"]] == everything
    assert [(p["total"], p["offset"]) for p in pages] == [(5, 0), (5, 2), (5, 4)]
    last = _get(env, key, "/transactions", f"{query}&cursor=last")
    assert last["items"] == everything[3:] and last["offset"] == 3


def test_bad_cursors_are_400(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    env.create(key)
    tx_cursor = _get(env, key, "/transactions", f"owner={owner.address}&cursor=first")
    assert tx_cursor["nextCursor"] is None  # no transactions: nothing further
    invoices = f"owner={owner.address}&limit=1"
    made = env.create(key)
    first = _get(env, key, "/invoices", f"{invoices}&cursor=first")
    assert first["items"][0]["guid"] == made["guid"]
    own_cursor: str = first["nextCursor"]
    for cursor in ("x", "bGFzdA", "e30", "%FF", "A" * 600, own_cursor[:-2]):
        env.api.get("/invoices", f"{invoices}&cursor={cursor}", session=key).error(
            400, prefix="invalid request: cursor: "
        )
    env.api.get("/transactions", f"owner={owner.address}&cursor={own_cursor}", session=key).error(
        400, prefix="invalid request: cursor: "
    )
    nowhere = Cursor("invoices", "older", "no-such-guid", 1).encode()
    env.api.get("/invoices", f"{invoices}&cursor={nowhere}", session=key).error(
        400, prefix="invalid request: cursor: no such position"
    )
    env.api.get("/invoices", f"{invoices}&offset=1&cursor=first", session=key).error(
        400, prefix="invalid request: offset: "
    )
    env.api.get("/invoices", f"{invoices}&limit=0&cursor=first", session=key).error(
        400, prefix="invalid request: limit: "
    )


def test_the_unpaged_list_has_a_ceiling_and_paging_still_works(make_env: MakeEnv) -> None:
    env = make_env(invoice_list_max=3)
    owner, [key] = env.merchant("m", "k")
    made = [env.create(key)["guid"] for _ in range(3)]
    listed = _get(env, key, "/invoices", f"owner={owner.address}")
    assert [i["guid"] for i in listed] == made
    # An empty cursor is a parameter not given, as every empty query value is.
    assert _get(env, key, "/invoices", f"owner={owner.address}&cursor=") == listed
    env.create(key)
    env.api.get("/invoices", f"owner={owner.address}", session=key).error(
        400, prefix="invalid request: limit: required: 4 invoices match, more than the 3 "
    )
    assert _get(env, key, "/invoices", f"owner={owner.address}&limit=50")["total"] == 4
    assert len(_get(env, key, "/invoices", f"owner={owner.address}&cursor=first")["items"]) == 4
