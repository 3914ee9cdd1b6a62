"""GET /invoices, GET /transactions and GET /prices (docs/interface.md §Invoices)."""

from __future__ import annotations

from typing import Any

from conf_env import NOW, USDC, USDC_1, Env, MakeEnv, deposit_address
from conf_keys import SessionKey


def _three(env: Env, key: SessionKey, address: str | None = None) -> list[dict[str, Any]]:
    made = []
    for i in range(3):
        made.append(env.create(key, description=f"order {i}", address=address))
        env.clock.advance(10)
    return made


def test_owner_list_without_paging_is_a_plain_array_oldest_first(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    made = _three(env, key)
    other, [other_key] = env.merchant("other", "k")
    env.create(other_key)
    listed = env.api.get("/invoices", f"owner={owner.address}", session=key).ok()
    assert isinstance(listed, list)
    assert [i["guid"] for i in listed] == [i["guid"] for i in made]
    assert listed == made  # full invoice records


def test_paging_gives_an_envelope_newest_first(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    made = _three(env, key)
    newest_first = [i["guid"] for i in reversed(made)]

    page = env.api.get("/invoices", f"owner={owner.address}&limit=2", session=key).ok()
    assert set(page) == {"items", "total", "offset", "limit"}
    assert [i["guid"] for i in page["items"]] == newest_first[:2]
    assert (page["total"], page["offset"], page["limit"]) == (3, 0, 2)

    page = env.api.get("/invoices", f"owner={owner.address}&offset=1", session=key).ok()
    assert [i["guid"] for i in page["items"]] == newest_first[1:]
    assert (page["total"], page["offset"]) == (3, 1)
    assert 2 <= page["limit"] <= 50  # the default page size is the server's choice

    page = env.api.get("/invoices", f"owner={owner.address}&offset=1&limit=1", session=key).ok()
    assert [i["guid"] for i in page["items"]] == newest_first[1:2]
    assert page["total"] == 3

    page = env.api.get("/invoices", f"owner={owner.address}&offset=7&limit=5", session=key).ok()
    assert page["items"] == []
    assert page["total"] == 3  # the unfiltered count, not the page's


def test_invoice_limit_is_clamped_to_50(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    for _ in range(52):
        env.create(key)
        env.clock.advance(1)
    page = env.api.get("/invoices", f"owner={owner.address}&limit=500", session=key).ok()
    assert page["limit"] == 50
    assert len(page["items"]) == 50
    assert page["total"] == 52
    assert len(env.api.get("/invoices", f"owner={owner.address}", session=key).ok()) == 52


def test_bad_paging_values_are_400(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    for query, field in [("limit=0", "limit"), ("limit=-1", "limit"), ("offset=x", "offset")]:
        env.api.get("/invoices", f"owner={owner.address}&{query}", session=key).error(
            400, prefix=f"invalid request: {field}: "
        )


def test_address_lookup_is_public_and_needs_chain_id(mode_env: Env) -> None:
    env = mode_env
    _, [key] = env.merchant("m", "k")
    shared = deposit_address("shared")
    made = _three(env, key, address=shared)
    env.create(key, address=deposit_address("elsewhere"))
    listed = env.api.get("/invoices", f"address={shared.lower()}&chainId=1").ok()
    assert [i["guid"] for i in listed] == [i["guid"] for i in made]
    page = env.api.get("/invoices", f"address={shared}&chainId=1&limit=1").ok()
    assert [i["guid"] for i in page["items"]] == [made[-1]["guid"]]
    assert page["total"] == 3
    assert env.api.get("/invoices", f"address={shared}&chainId=137").ok() == []
    env.api.get("/invoices", f"address={shared}").error(400, prefix="invalid request: chainId: ")
    env.api.get("/invoices", f"address={shared}&chainId=999999999").error(
        400, prefix="invalid request: chainId: "
    )


def test_neither_owner_nor_address_is_a_400(env: Env) -> None:
    env.api.get("/invoices").error(400, prefix="invalid request: ")


def test_owner_lookup_needs_a_session_in_strict_mode(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    env.create(key)
    env.api.get("/invoices", f"owner={owner.address}").error(401, prefix="session signature: ")


def test_owner_lookup_without_session_in_soft_mode(make_env: MakeEnv) -> None:
    env = make_env(auth_mode="soft")
    owner, [key] = env.merchant("m", "k")
    made = env.create(key)
    assert env.api.get("/invoices", f"owner={owner.address}").ok() == [made]


def test_owner_lookup_of_another_owner_is_forbidden(mode_env: Env) -> None:
    env = mode_env
    _, [key] = env.merchant("m", "k")
    other, [other_key] = env.merchant("other", "k")
    env.create(other_key)
    env.api.get("/invoices", f"owner={other.address}", session=key).error(403, prefix="forbidden: ")


def test_lazy_expiry_applies_to_listed_invoices(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    made = env.create(key, deadlineSecs=30)
    env.clock.advance(31)
    [listed] = env.api.get("/invoices", f"owner={owner.address}", session=key).ok()
    assert listed["guid"] == made["guid"]
    assert listed["status"] == "expired"
    assert [e["status"] for e in env.poll(key)] == ["expired"]


# -- GET /transactions --------------------------------------------------------------------


def test_transactions_envelope_with_deposit_items(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    invoice = env.create(key, value="3000")
    payer = deposit_address("payer")
    env.deposit(invoice["address"], "1.5", payer=payer)
    page = env.api.get("/transactions", f"owner={owner.address}", session=key).ok()
    assert set(page) == {"items", "total", "offset", "limit"}
    assert (page["total"], page["offset"]) == (1, 0)
    assert 1 <= page["limit"] <= 200
    [item] = page["items"]
    assert item == {
        "type": "deposit",
        "txHash": "0x" + f"{1:064x}",
        "logIndex": 1,
        "chainId": "1",
        "token": "0x0000000000000000000000000000000000000000",
        "from": payer,
        "amount": "1.5",
        "vsValue": 3000,
        "timestamp": NOW,
        "guid": invoice["guid"],
    }


def test_transactions_chain_filter_paging_and_clamp(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    on_1 = env.create(key, value="1000000")
    on_137 = env.create(
        key, chainId=137, acceptedTokens=["137:0x0000000000000000000000000000000000000000"]
    )
    for _ in range(3):
        env.deposit(on_1["address"], "0.1")
    env.deposit(on_137["address"], "2", chain_id=137)

    def page(query: str) -> Any:
        return env.api.get("/transactions", f"owner={owner.address}{query}", session=key).ok()

    everything = page("")
    assert everything["total"] == 4
    assert sorted(i["chainId"] for i in everything["items"]) == ["1", "1", "1", "137"]
    only_137 = page("&chainId=137")
    assert only_137["total"] == 1
    assert [(i["chainId"], i["guid"], i["vsValue"]) for i in only_137["items"]] == [
        ("137", on_137["guid"], 1)
    ]
    assert page("&chainId=1")["total"] == 3
    paged = page("&limit=2&offset=1")
    assert (len(paged["items"]), paged["total"], paged["offset"], paged["limit"]) == (2, 4, 1, 2)
    assert page("&limit=5000")["limit"] == 200
    env.api.get("/transactions", f"owner={owner.address}&chainId=5555555", session=key).error(
        400, prefix="invalid request: chainId: "
    )


def test_transactions_are_the_owners_own(mode_env: Env) -> None:
    env = mode_env
    owner, [key] = env.merchant("m", "k")
    other, [other_key] = env.merchant("other", "k")
    env.deposit(env.create(other_key)["address"], "1")
    assert env.api.get("/transactions", f"owner={owner.address}", session=key).ok()["total"] == 0
    env.api.get("/transactions", f"owner={other.address}", session=key).error(
        403, prefix="forbidden: "
    )


def test_transactions_need_a_session_in_strict_mode(env: Env) -> None:
    owner, _ = env.merchant("m")
    env.api.get("/transactions", f"owner={owner.address}").error(401, prefix="session signature: ")


def test_foreign_token_deposit_is_listed_but_not_counted(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    invoice = env.create(key, value="10")
    env.deposit(invoice["address"], "50", token=USDC)
    page = env.api.get("/transactions", f"owner={owner.address}", session=key).ok()
    assert [(i["token"], i["amount"]) for i in page["items"]] == [(USDC, "50")]
    read = env.api.get(f"/invoice/{invoice['guid']}").ok()
    assert (read["status"], read["paidAmount"], read["payments"]) == ("init", "0", [])


# -- GET /prices --------------------------------------------------------------------------


def test_prices_are_public_in_strict_mode(env: Env) -> None:
    snapshot = env.api.get("/prices").ok()
    assert snapshot == {
        "vsCurrency": "usd",
        "fetchedAt": NOW,
        "prices": {
            "1:0x0000000000000000000000000000000000000000": 2000,
            USDC_1: 1,
            "137:0x0000000000000000000000000000000000000000": 0.5,
        },
    }
