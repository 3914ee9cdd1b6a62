"""The wallet helpers that need no chain node: /withdraw (410) and /history (GET or POST).

docs/interface.md: each helper answers GET and POST with the same fields; 410
for /withdraw. The node-backed helpers are exercised on anvil in tests/chains/evm.
"""

from __future__ import annotations

import pytest
from conf_env import Env, MakeEnv

from paycore.api import ROUTES

_PATHS = {route.path for route in ROUTES}


def _needs(path: str) -> None:
    if path not in _PATHS:
        pytest.skip(f"{path} is not in the route table yet")


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_withdraw_is_gone(env: Env, method: str) -> None:
    _needs("/withdraw")
    env.api.call(method, "/withdraw").error(410)


def test_history_by_get_and_by_post_lists_the_owners_deposits(env: Env) -> None:
    _needs("/history")
    owner, [key] = env.merchant("m", "k")
    invoice = env.create(key, value="4000")
    env.deposit(invoice["address"], "1")
    env.clock.advance(5)
    env.deposit(invoice["address"], "0.5")
    by_get = env.api.get("/history", f"ownerAddress={owner.address}&chainId=1", session=key).ok()
    by_post = env.api.post(
        "/history", {"ownerAddress": owner.address, "chainId": 1}, session=key
    ).ok()
    assert by_get == by_post
    assert [(h["type"], h["amount"], h["guid"]) for h in by_get] == [
        ("deposit", "0.5", invoice["guid"]),
        ("deposit", "1", invoice["guid"]),
    ]
    assert (
        env.api.post("/history", {"ownerAddress": owner.address, "chainId": 137}, session=key).ok()
        == []
    )


def test_history_is_owner_scoped(make_env: MakeEnv) -> None:
    _needs("/history")
    env = make_env()
    owner, [key] = env.merchant("m", "k")
    other, _ = env.merchant("other")
    env.api.get("/history", f"ownerAddress={owner.address}").error(
        401, prefix="session signature: "
    )
    env.api.post("/history", {"ownerAddress": other.address}, session=key).error(
        403, prefix="forbidden: "
    )
    signed_for = f"/paycore/history?ownerAddress={owner.address}&chainId=1"
    env.api.get(
        "/history", f"ownerAddress={owner.address}&chainId=137", session=key, sign_uri=signed_for
    ).error(401, prefix="session signature: ")
