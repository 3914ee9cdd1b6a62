"""POST/GET /merchant/profile over HTTP through the core and both adapters: the owner sets
the identity the checkout page shows, reads it back, and every bad field is a one-line 400
that writes nothing."""

from __future__ import annotations

from typing import Any

from conf_api import Answer, Api
from conf_env import Env
from conf_schema import problems

LOGO = "https://cdn.shop.example/brand/logo.svg"


def _checked(api: Api, answer: Answer, method: str) -> Any:
    body = answer.ok()
    declared = api.get("/openapi.json").ok()["paths"]["/merchant/profile"][method]["responses"]
    schema = declared["200"]["content"]["application/json"]["schema"]
    assert problems(body, schema) == []
    return body


def test_an_owner_sets_and_reads_back_the_profile(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    q = f"owner={owner.address}"
    env.api.get("/merchant/profile", q, session=key).error(
        404, f"no merchant profile for {owner.address}"
    )
    body = {"name": "  Mugs &   Co ", "logoUrl": LOGO, "support": "help@shop.example"}
    saved = _checked(env.api, env.api.post("/merchant/profile", body, session=key), "post")
    assert saved == {
        "ownerAddress": owner.address,
        "name": "Mugs & Co",  # runs of spaces folded
        "logoUrl": LOGO,
        "support": "help@shop.example",
        "updatedAt": int(env.clock.now),
    }
    assert _checked(env.api, env.api.get("/merchant/profile", q, session=key), "get") == saved
    # a set replaces the whole profile: fields left out are cleared
    env.clock.advance(10)
    url = "https://shop.example/help?topic=payment"
    again = env.api.post("/merchant/profile", {"name": "Mugs", "support": url}, session=key).ok()
    assert (again["logoUrl"], again["support"], again["updatedAt"]) == (
        None,
        url,
        saved["updatedAt"] + 10,
    )
    assert env.api.get("/merchant/profile", q, session=key).ok() == again


def test_bad_profiles_are_refused_with_one_line_and_nothing_stored(env: Env) -> None:
    owner, [key] = env.merchant("m", "k")
    other, [theirs] = env.merchant("o", "k")
    bad: list[tuple[dict[str, Any], str]] = [
        ({}, "invalid request: name: required"),
        ({"name": "   "}, "invalid request: name: must not be empty"),
        ({"name": "x" * 101}, "invalid request: name: "),
        ({"name": "A\x07B"}, "invalid request: name: must not hold control characters"),
        (
            {"name": "A", "logoUrl": "http://cdn.example/l.png"},
            "invalid request: logoUrl: must be an https URL",
        ),
        (
            {"name": "A", "logoUrl": "javascript:alert(1)"},
            "invalid request: logoUrl: must be an https URL",
        ),
        (
            {"name": "A", "logoUrl": "https://a.example/x.png; script-src *"},
            "invalid request: logoUrl: must be an https URL without spaces, quotes, ; or ,",
        ),
        (
            {"name": "A", "logoUrl": "https://u:p@a.example/x.png"},
            "invalid request: logoUrl: must not carry a user name or password",
        ),
        ({"name": "A", "logoUrl": "https://a.example/" + "x" * 500}, "invalid request: logoUrl: "),
        (
            {"name": "A", "support": "call us"},
            "invalid request: support: must be an e-mail address or an https URL",
        ),
        (
            {"name": "A", "support": "a@b"},
            "invalid request: support: must be an e-mail address or an https URL",
        ),
        (
            {"name": "A", "support": "mailto:a@b.example"},
            "invalid request: support: must be an e-mail address or an https URL",
        ),
        (
            {"name": "A", "support": "http://shop.example/help"},
            "invalid request: support: must be an e-mail address or an https URL",
        ),
        ({"name": 5}, "invalid request: name: "),
        ({"name": "A", "colour": "red"}, "invalid request: colour: "),
    ]
    for body, text in bad:
        answer = env.api.post("/merchant/profile", body, session=key)
        line = answer.error(400, prefix=text)
        assert "\n" not in line and "Traceback" not in line, (body, line)
    env.api.get("/merchant/profile", f"owner={owner.address}", session=key).error(404)
    # owner-scoped: no session, or another owner's, is refused
    env.api.post("/merchant/profile", {"name": "A", "ownerAddress": owner.address}).error(401)
    env.api.post(
        "/merchant/profile", {"name": "A", "ownerAddress": owner.address}, session=theirs
    ).error(403)
    env.api.get("/merchant/profile", f"owner={owner.address}", session=theirs).error(403)
    env.api.get("/merchant/profile", f"owner={other.address}", session=theirs).error(404)
