"""The management functions, app keys and staking helpers on every transport.

Salt-signed calls (docs/interface.md §Salt-signed calls; docs/management.md): the body is
signed over its JSON text; refusals are 400 (salt or signature missing, bad fields), 401
(stale salt, bad or reused signature), 403 (a signer that is neither a known owner nor an app key).
There is no chain node here, so every call is storage-only (``transaction`` and ``onChain`` null)
and the staking helpers answer 400; tests/chains/evm runs the chain side on anvil.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from conf_api import Answer, Api
from conf_env import CHECKOUT, NATIVE, PRICES, Env, FakeClock, MakeEnv
from conf_keys import SessionKey, account, sign_text
from conf_schema import problems
from conf_transport import open_transport
from eth_account.signers.local import LocalAccount

from paycore.config import Settings
from paycore.gateway import Gateway
from paycore.management.service import enable_email
from paycore.storage.memory import MemoryStorage

HOOK = "https://merchant.example.test/hooks/paycore"
USDC = "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"


@pytest.fixture
def make_env(transport_name: str) -> Iterator[MakeEnv]:
    """The suite's ``make_env``, with storage on the gateway's clock: a remembered signature
    expires by the same clock the salt window is judged by (storage's own default is the
    wall clock, which would let a replay through under the suite's 2023 clock)."""
    stack = ExitStack()

    def make(**overrides: Any) -> Env:
        clock = FakeClock()
        values: dict[str, Any] = {
            "database_url": "memory://",
            "prices": PRICES,
            "checkout_url": CHECKOUT,
        }
        values.update(overrides)
        gateway = Gateway(
            Settings(**values), storage=MemoryStorage(clock=clock), entry_points=False, clock=clock
        )
        stack.callback(gateway.close)
        transport = stack.enter_context(open_transport(transport_name, gateway))
        return Env(Api(transport), gateway, clock)

    with stack:
        yield make


#: The test's app keys by address, so a body naming one can carry its consent.
APP_KEYS: dict[str, LocalAccount] = {}
#: ``appKeySignature=CONSENT``: :func:`salted` writes the named key's consent there.
CONSENT = object()


def app_key(label: str) -> LocalAccount:
    key = account(label)
    APP_KEYS[key.address.lower()] = key
    return key


def consent(owner: str, key: LocalAccount, salt: int) -> str:
    """The app key's agreement to act for ``owner`` (docs/management.md §App keys)."""
    return sign_text(key, f"accept-app-key:{owner.lower()}:{key.address.lower()}:{salt}")


def salted(
    env: Env, signer: LocalAccount, salt: Any = None, owner: str | None = None, **fields: Any
) -> dict[str, Any]:
    """``{salt, ...fields, signature}`` as a browser builds it (JSON.stringify == compact
    json.dumps for these ASCII bodies). ``appKeySignature=CONSENT`` becomes the consent of
    ``appKeyAddress`` (one of :data:`APP_KEYS`) to act for ``owner`` (default: the body's
    ``ownerAddress``, else the signer)."""
    body = {"salt": int(env.clock.now) if salt is None else salt, **fields}
    if body.get("appKeySignature") is CONSENT:
        key = APP_KEYS[str(fields["appKeyAddress"]).lower()]
        meant = owner or fields.get("ownerAddress") or signer.address
        body["appKeySignature"] = consent(meant, key, int(body["salt"]))
    body["signature"] = sign_text(signer, json.dumps(body, separators=(",", ":")))
    return body


def known_owner(env: Env, label: str) -> tuple[LocalAccount, SessionKey]:
    """An owner paycore knows: it registered a session key and created an invoice."""
    owner, [key] = env.merchant(label, "k")
    env.create(key)
    return owner, key


class Schemas:
    """The served OpenAPI document's success schemas."""

    def __init__(self, env: Env) -> None:
        self.paths = env.api.get("/openapi.json").ok()["paths"]

    def check(self, path: str, answer: Answer, method: str = "post") -> Any:
        body = answer.ok()
        schema = self.paths[path][method]["responses"]["200"]["content"]["application/json"]
        assert problems(body, schema["schema"]) == [], (path, problems(body, schema["schema"]))
        return body


#: One valid set of fields per salt-signed path.
SALTED = {
    "/changeCallbackUrl": {"newCallbackUrl": HOOK, "chainId": 1},
    "/setEmailNotifications": {"emailAddress": "shop@example.com", "chainId": 1},
    "/disableWalletIndex": {"chainId": 1, "walletIndex": 3},
    "/enableWalletIndex": {"chainId": 1, "walletIndex": 3},
    "/addNewAppKey": {"appKeyAddress": app_key("app:new").address, "appKeySignature": CONSENT},
    "/removeAppKey": {"appKeyAddress": account("app:new").address},
}
PATHS = sorted(SALTED)


# -- refusals shared by every salt-signed call -------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
def test_missing_salt_or_signature_is_400(env: Env, path: str) -> None:
    owner, _ = known_owner(env, "m")
    # These bodies are refused before any signature is read: a consent's text is a stand-in.
    fields = {k: "0x" + "11" * 65 if v is CONSENT else v for k, v in SALTED[path].items()}
    no_salt = {**fields, "signature": sign_text(owner, json.dumps(fields, separators=(",", ":")))}
    env.api.post(path, no_salt).error(400, "invalid request: salt: required")
    env.api.post(path, {"salt": int(env.clock.now), **fields}).error(
        400, "invalid request: signature: required"
    )
    env.api.post(path, salted(env, owner, salt="soon", **fields)).error(
        400, "invalid request: salt: must be a unix timestamp in seconds"
    )
    env.api.post(path, raw_body=b"").error(400, prefix="invalid request: body: ")
    env.api.post(path, raw_body=b"[1]").error(400, "invalid request: body: must be a JSON object")
    env.api.get(path).error(405)


@pytest.mark.parametrize("path", PATHS)
def test_stale_salt_and_reused_signature_are_401(env: Env, path: str) -> None:
    owner, _ = known_owner(env, "m")
    env.api.post(path, salted(env, owner, salt=int(env.clock.now) - 601, **SALTED[path])).error(
        401, "wallet signature: salt is more than 600 seconds away from the server clock"
    )
    env.api.post(path, salted(env, owner, salt=int(env.clock.now) + 601, **SALTED[path])).error(
        401, prefix="wallet signature: salt is more than"
    )
    body = salted(env, owner, **SALTED[path])
    first = env.api.post(path, body)
    assert first.status != 401, first.text  # accepted or refused on its merits, once
    env.api.post(path, body).error(401, "wallet signature: signature was already used")
    env.api.post(path, {**body, "signature": "0x1234"}).error(401, prefix="wallet signature: ")


@pytest.mark.parametrize("path", PATHS)
def test_a_signer_neither_owner_nor_app_key_is_403(env: Env, path: str) -> None:
    known_owner(env, "m")
    stranger = account("stranger")
    env.api.post(path, salted(env, stranger, **SALTED[path])).error(
        403,
        f"forbidden: the signer {stranger.address} is neither an owner known to paycore "
        "nor an app key of one",
    )


@pytest.mark.parametrize("path", PATHS)
def test_a_tampered_body_recovers_someone_else(env: Env, path: str) -> None:
    owner, _ = known_owner(env, "m")
    body = salted(env, owner, **SALTED[path])
    body["chainId"] = 137  # not what was signed
    env.api.post(path, body).error(403, prefix="forbidden: the signer ")


@pytest.mark.parametrize("path", PATHS)
def test_naming_an_owner_one_is_not_the_key_of_is_403(env: Env, path: str) -> None:
    owner, _ = known_owner(env, "m")
    other, _ = known_owner(env, "other")
    body = salted(env, other, **SALTED[path], ownerAddress=owner.address)
    env.api.post(path, body).error(
        403, f"forbidden: {other.address} is neither {owner.address} nor one of its app keys"
    )


# -- /changeCallbackUrl -----------------------------------------------------------------------


def test_change_callback_url_moves_the_webhook_and_keeps_its_secret(env: Env) -> None:
    schemas = Schemas(env)
    owner, _ = known_owner(env, "m")
    lower = owner.address.lower()
    first = env.api.post(
        "/webhook/set",
        {"ownerAddress": owner.address, "url": HOOK,
         "signature": sign_text(owner, f"set-webhook:{lower}:{HOOK}")},
    ).ok()  # fmt: skip
    moved = schemas.check(
        "/changeCallbackUrl",
        env.api.post(
            "/changeCallbackUrl", salted(env, owner, newCallbackUrl=HOOK + "/v2", chainId=1)
        ),
    )
    assert moved == {
        "ownerAddress": owner.address,
        "chainId": 1,
        "url": HOOK + "/v2",
        "previousUrl": HOOK,
    }
    now = env.api.post(
        "/webhook/get",
        {"ownerAddress": owner.address, "signature": sign_text(owner, f"get-webhook:{lower}")},
    ).ok()
    assert now == {"ownerAddress": owner.address, "url": HOOK + "/v2", "secret": first["secret"]}

    # The next event's delivery goes to the new URL.
    invoice = env.create(env.merchant("m", "k2")[1][0])
    env.deposit(invoice["address"], "0.001")
    with env.gateway.storage.transaction() as tx:
        claimed = tx.claim_deliveries(int(env.clock.now * 1000) + 1, 1000, "lease", 10)
    assert [c.url for c in claimed] == [HOOK + "/v2"]


def test_change_callback_url_without_a_webhook_sets_one(env: Env) -> None:
    owner, _ = known_owner(env, "m")
    moved = env.api.post("/changeCallbackUrl", salted(env, owner, newCallbackUrl=HOOK, chainId=1))
    assert moved.ok()["previousUrl"] == ""
    with env.gateway.storage.transaction() as tx:
        webhook = tx.get_webhook(owner.address)
    assert webhook is not None and webhook.url == HOOK and webhook.secret.startswith("whsec_")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1/hook", "resolves to a private, loopback or link-local address"),
        ("http://10.1.2.3/hook", "resolves to a private, loopback or link-local address"),
        ("http://169.254.169.254/latest", "resolves to a private, loopback or link-local"),
        ("http://[::1]:8080/h", "resolves to a private, loopback or link-local address"),
        ("ftp://merchant.example.test/h", "must be an http or https URL with a host"),
        ("", "required"),
        (17, "must be a string"),
    ],
)
def test_change_callback_url_refuses_bad_and_private_urls(env: Env, url: Any, reason: str) -> None:
    owner, _ = known_owner(env, "m")
    answer = env.api.post("/changeCallbackUrl", salted(env, owner, newCallbackUrl=url, chainId=1))
    text = answer.error(400, prefix="invalid request: newCallbackUrl: ")
    assert reason in text


def test_private_urls_pass_when_the_operator_allows_them(make_env: MakeEnv) -> None:
    env = make_env(webhook_allow_private=True)
    owner, _ = known_owner(env, "m")
    url = "http://127.0.0.1:9000/hook"
    body = salted(env, owner, newCallbackUrl=url, chainId=1)
    assert env.api.post("/changeCallbackUrl", body).ok()["url"] == url


def test_change_callback_url_checks_the_chain(env: Env) -> None:
    owner, _ = known_owner(env, "m")
    for chain_id, reason in ((999_999, "unsupported chain 999999"), ("one", "must be a non-")):
        body = salted(env, owner, newCallbackUrl=HOOK, chainId=chain_id)
        text = env.api.post("/changeCallbackUrl", body).error(400, prefix="invalid request: ")
        assert reason in text
    env.api.post("/changeCallbackUrl", salted(env, owner, newCallbackUrl=HOOK)).error(
        400, "invalid request: chainId: required"
    )


# -- /setEmailNotifications -------------------------------------------------------------------


def test_set_email_is_stored_and_off_until_the_operator_enables_it(env: Env) -> None:
    schemas = Schemas(env)
    owner, _ = known_owner(env, "m")

    def put(email: str, chain_id: int = 1) -> Any:
        body = salted(env, owner, emailAddress=email, chainId=chain_id)
        env.clock.advance(1)
        return schemas.check("/setEmailNotifications", env.api.post("/setEmailNotifications", body))

    assert put("shop@example.com") == {
        "ownerAddress": owner.address,
        "chainId": 1,
        "emailAddress": "shop@example.com",
        "enabled": False,
    }
    put("polygon@example.com", 137)
    enable_email(env.gateway, owner.address, 1)
    assert put("shop@example.com")["enabled"] is True  # unchanged address: still on
    assert put("new@example.com")["enabled"] is False  # a new one waits for the operator
    assert put("")["emailAddress"] == ""  # removed
    with env.gateway.storage.transaction() as tx:
        assert [(s.chain_id, s.email) for s in tx.emails_of(owner.address)] == [
            (137, "polygon@example.com")
        ]


@pytest.mark.parametrize(
    "email",
    [
        "no-at-sign",
        "a@b",
        "two@@example.com",
        "shop@example.com\r\nBcc: victim@example.com",
        "Shop <shop@example.com>",
        "a" * 65 + "@example.com",
        "x@" + "d" * 250 + ".com",
        "dots..twice@example.com",
        17,
        None,
    ],
)
def test_set_email_refuses_what_is_not_a_plain_address(env: Env, email: Any) -> None:
    owner, _ = known_owner(env, "m")
    body = salted(env, owner, emailAddress=email, chainId=1)
    env.api.post("/setEmailNotifications", body).error(
        400, prefix="invalid request: emailAddress: "
    )


# -- /disableWalletIndex and /enableWalletIndex -----------------------------------------------


def test_wallet_index_flags_are_recorded_storage_only_without_a_chain(env: Env) -> None:
    schemas = Schemas(env)
    owner, _ = known_owner(env, "m")

    def flag(path: str, index: Any, signer: LocalAccount = owner) -> Any:
        env.clock.advance(1)
        body = salted(env, signer, chainId=1, walletIndex=index)
        return schemas.check(path, env.api.post(path, body))

    off = flag("/disableWalletIndex", 4)
    assert off == {
        "ownerAddress": owner.address,
        "chainId": 1,
        "walletIndex": 4,
        "disabled": True,
        "changed": True,
        "transaction": None,
        "onChain": None,
    }
    assert flag("/disableWalletIndex", "4")["changed"] is False
    # Above 2**53 a JavaScript number is rounded before JSON.stringify sees it, so a big
    # index travels as a string (as it must from a browser).
    flag("/disableWalletIndex", str(2**63 - 1))
    with env.gateway.storage.transaction() as tx:
        assert tx.disabled_wallet_indexes(owner.address, 1) == [4, 2**63 - 1]
    on = flag("/enableWalletIndex", 4)
    assert (on["disabled"], on["changed"]) == (False, True)
    assert flag("/enableWalletIndex", 4)["changed"] is False
    with env.gateway.storage.transaction() as tx:
        assert tx.disabled_wallet_indexes(owner.address, 1) == [2**63 - 1]


@pytest.mark.parametrize("path", ["/disableWalletIndex", "/enableWalletIndex"])
@pytest.mark.parametrize(
    ("index", "reason"),
    [
        (-1, "must be a non-negative integer"),
        ("x", "must be a non-negative integer"),
        (1.5, "must be a non-negative integer"),
        (True, "must be a non-negative integer"),
        (2**63, f"must be at most {2**63 - 1}"),
        (None, "required"),
    ],
)
def test_wallet_index_must_be_an_index(env: Env, path: str, index: Any, reason: str) -> None:
    owner, _ = known_owner(env, "m")
    body = salted(env, owner, chainId=1, walletIndex=index)
    env.api.post(path, body).error(400, f"invalid request: walletIndex: {reason}")


# -- app keys ---------------------------------------------------------------------------------


def test_app_key_lifecycle(env: Env) -> None:
    schemas = Schemas(env)
    owner, _ = known_owner(env, "m")
    first, second = app_key("app:1"), app_key("app:2")

    def call(path: str, signer: LocalAccount, key: str, **extra: Any) -> Answer:
        env.clock.advance(1)
        if path == "/addNewAppKey":
            extra["appKeySignature"] = CONSENT
        body = salted(env, signer, owner=owner.address, appKeyAddress=key, **extra)
        return env.api.post(path, body)

    added = schemas.check("/addNewAppKey", call("/addNewAppKey", owner, first.address))
    assert added == {
        "ownerAddress": owner.address,
        "appKey": {
            "address": first.address,
            "addedAt": int(env.clock.now),
            "addedBy": owner.address,
        },
        "transaction": None,
        "onChain": None,
    }
    # The app key acts for the owner: it adds the next key, sets the e-mail, moves indexes.
    by_key = call("/addNewAppKey", first, second.address.lower()).ok()
    assert by_key["ownerAddress"] == owner.address
    assert by_key["appKey"]["address"] == second.address
    assert by_key["appKey"]["addedBy"] == first.address
    env.clock.advance(1)
    email = salted(env, first, emailAddress="keys@example.com", chainId=1)
    assert env.api.post("/setEmailNotifications", email).ok()["ownerAddress"] == owner.address
    env.clock.advance(1)
    index = salted(env, second, chainId=1, walletIndex=9, ownerAddress=owner.address)
    assert env.api.post("/disableWalletIndex", index).ok()["ownerAddress"] == owner.address

    listed = env.api.post("/getAppKeys", {"ownerAddress": owner.address})
    assert [k["address"] for k in schemas.check("/getAppKeys", listed)] == [
        first.address,
        second.address,
    ]

    call("/removeAppKey", first, second.address).error(
        403, "forbidden: only the owner removes app keys"
    )
    removed = schemas.check("/removeAppKey", call("/removeAppKey", owner, second.address))
    assert removed == {
        "ownerAddress": owner.address,
        "appKeyAddress": second.address,
        "removed": True,
        "transaction": None,
        "onChain": None,
    }
    call("/removeAppKey", owner, second.address).error(404, f"app key {second.address} not found")
    # A removed key is nobody's again: paycore no longer knows it.
    call("/addNewAppKey", second, app_key("app:3").address).error(
        403, prefix=f"forbidden: the signer {second.address} is neither"
    )
    listed = env.api.post("/getAppKeys", {"ownerAddress": owner.address}).ok()
    assert [k["address"] for k in listed] == [first.address]


def test_app_key_rules(env: Env) -> None:
    owner, _ = known_owner(env, "m")
    other, _ = known_owner(env, "other")

    def add(signer: LocalAccount, key: Any) -> Answer:
        env.clock.advance(1)
        # Keys refused before their consent is read get a stand-in signature.
        known = str(key).lower() in APP_KEYS
        extra = {"appKeySignature": CONSENT if known else "0x" + "11" * 65}
        return env.api.post("/addNewAppKey", salted(env, signer, appKeyAddress=key, **extra))

    keys = [app_key(f"app:{n}").address for n in range(11)]
    for key in keys[:10]:
        add(owner, key).ok()
    add(owner, keys[10]).error(409, "Conflict: an owner has at most 10 app keys")
    add(owner, keys[3]).error(409, f"Conflict: {keys[3]} is already an app key of {owner.address}")
    add(other, keys[3]).error(409, f"Conflict: {keys[3]} is already an app key of another owner")
    add(owner, owner.address).error(
        400, "invalid request: appKeyAddress: is the owner itself, which needs no app key"
    )
    add(owner, NATIVE).error(400, "invalid request: appKeyAddress: must not be the zero address")
    add(owner, "0x1234").error(400, "invalid request: appKeyAddress: not a 20-byte hex address")
    add(owner, USDC.lower().replace("a", "A", 1)).error(
        400, "invalid request: appKeyAddress: EIP-55 checksum mismatch"
    )
    add(owner, None).error(400, "invalid request: appKeyAddress: required")
    assert len(env.api.post("/getAppKeys", {"ownerAddress": owner.address}).ok()) == 10
    # Removing one makes room again.
    env.clock.advance(1)
    env.api.post("/removeAppKey", salted(env, owner, appKeyAddress=keys[0])).ok()
    add(owner, keys[10]).ok()


def test_get_app_keys_is_public_and_checks_its_fields(env: Env) -> None:
    owner, _ = known_owner(env, "m")
    assert env.api.post("/getAppKeys", {"ownerAddress": owner.address}).ok() == []
    env.api.post("/getAppKeys", {}).error(400, prefix="invalid request: ownerAddress: ")
    env.api.post("/getAppKeys", {"ownerAddress": "0x12"}).error(
        400, "invalid request: ownerAddress: not a 20-byte hex address"
    )
    env.api.post("/getAppKeys", {"ownerAddress": owner.address, "chainId": 5}).error(
        400, "invalid request: chainId: unsupported chain 5"
    )
    # Without a chain backend on chain 1 the records come back as paycore holds them.
    assert env.api.post("/getAppKeys", {"ownerAddress": owner.address, "chainId": 1}).ok() == []
    env.api.get("/getAppKeys").error(405)


# -- staking helpers --------------------------------------------------------------------------

STAKING = {
    "/mevStakingInfo": {"ownerAddresses": [account("o").address], "tokenList": [USDC]},
    "/mevStake": {"ownerAddress": account("o").address, "tokenAddress": USDC, "value": "5"},
    "/mevUnstake": {"ownerAddress": account("o").address, "tokenAddress": USDC, "value": 5},
    "/mevClaim": {"ownerAddress": account("o").address, "tokenList": [USDC]},
}


def _query(fields: dict[str, Any]) -> str:
    return "&".join(f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in fields.items())


@pytest.mark.parametrize("path", sorted(STAKING))
def test_staking_helpers_say_when_no_program_is_configured(env: Env, path: str) -> None:
    expected = "invalid request: chainId: no staking contract is configured on this deployment"
    env.api.post(path, STAKING[path]).error(400, expected)
    env.api.get(path, _query(STAKING[path])).error(400, expected)


@pytest.mark.parametrize("path", sorted(STAKING))
def test_staking_helpers_need_an_evm_backend_on_their_chain(make_env: MakeEnv, path: str) -> None:
    env = make_env(staking_contract="0x" + "ab" * 20, staking_chain_id=1)
    env.api.post(path, STAKING[path]).error(
        400, "invalid request: chainId: no EVM backend is configured for chain 1"
    )
    env.api.post(path, {**STAKING[path], "chainId": 137}).error(
        400, "invalid request: chainId: staking runs on chain 1 only"
    )


@pytest.mark.parametrize(
    ("path", "change", "message"),
    [
        ("/mevStake", {"value": "0"}, "value: must be between 1 and 2**256 - 1"),
        ("/mevStake", {"value": 2**256}, "value: must be between 1 and 2**256 - 1"),
        ("/mevStake", {"value": "1.5"}, "value: must be a non-negative integer"),
        ("/mevStake", {"value": None}, "value: required"),
        ("/mevStake", {"tokenAddress": NATIVE}, "tokenAddress: must be an ERC20 token"),
        ("/mevUnstake", {"ownerAddress": "0xzz"}, "ownerAddress: not a 20-byte hex address"),
        ("/mevUnstake", {"tokenAddress": None}, "tokenAddress: required"),
        ("/mevClaim", {"tokenList": []}, "tokenList: required, a non-empty array"),
        ("/mevClaim", {"tokenList": [USDC] * 21}, "tokenList: at most 20 entries"),
        ("/mevClaim", {"tokenList": ["0x1"]}, "tokenList[0]: not a 20-byte hex address"),
        ("/mevStakingInfo", {"ownerAddresses": "x"}, "ownerAddresses: must be an array"),
        ("/mevStakingInfo", {"ownerAddresses": [USDC] * 51}, "ownerAddresses: at most 50"),
        ("/mevStakingInfo", {"tokenList": None}, "tokenList: required"),
    ],
)
def test_staking_helpers_check_their_fields_first(
    env: Env, path: str, change: dict[str, Any], message: str
) -> None:
    env.api.post(path, {**STAKING[path], **change}).error(400, prefix=f"invalid request: {message}")


# -- /getFaucet (already served: checked here with this endpoints) -------------------


def test_get_faucet_is_for_dev_chains_with_a_backend(env: Env) -> None:
    to = account("payee").address
    env.api.post("/getFaucet", {"chainId": 1, "to": to}).error(
        400, "invalid request: chainId: the faucet exists on chain 1337 and 31337 only"
    )
    env.api.get("/getFaucet", f"chainId=1337&to={to}").error(
        400, "invalid request: chainId: no smart-wallet backend is configured for chain 1337"
    )
    env.api.post("/getFaucet", {"to": to}).error(400, "invalid request: chainId: required")


# -- consent: an address becomes an app key only when its holder agrees --------------------------


def test_an_app_key_needs_its_own_consent(env: Env) -> None:
    """App-key squatting: B names A's wallet as its app key. Without A's consent it is
    refused, and A's own calls keep acting for A."""
    victim, _ = known_owner(env, "victim")
    squatter, _ = known_owner(env, "squatter")
    key = APP_KEYS.setdefault(victim.address.lower(), victim)

    def add(**fields: Any) -> Answer:
        env.clock.advance(1)
        body = salted(env, squatter, appKeyAddress=victim.address, **fields)
        return env.api.post("/addNewAppKey", body)

    add().error(400, "invalid request: appKeySignature: required")
    wanted = f"accept-app-key:{squatter.address.lower()}:{victim.address.lower()}:"
    # the squatter's own signature, the victim's consent to someone else, an old salt's
    for forged in (
        consent(squatter.address, squatter, int(env.clock.now) + 1),
        consent(account("third").address, key, int(env.clock.now) + 1),
        consent(squatter.address, key, int(env.clock.now) - 5),
    ):
        text = add(appKeySignature=forged).error(401, prefix="app key signature: not signed by ")
        assert wanted in text, text
    add(appKeySignature="0x12").error(401, prefix="app key signature: ")
    assert env.api.post("/getAppKeys", {"ownerAddress": squatter.address}).ok() == []
    # The victim's call without ownerAddress, as docs/management.md shows it, is the victim's.
    env.clock.advance(1)
    moved = env.api.post("/changeCallbackUrl", salted(env, victim, newCallbackUrl=HOOK, chainId=1))
    assert moved.ok()["ownerAddress"] == victim.address


def test_a_signer_that_is_an_owner_and_an_app_key_must_name_the_owner(env: Env) -> None:
    owner, _ = known_owner(env, "boss")
    both, _ = known_owner(env, "both")  # a merchant of its own ...
    APP_KEYS.setdefault(both.address.lower(), both)
    env.clock.advance(1)
    body = salted(env, owner, appKeyAddress=both.address, appKeySignature=CONSENT)
    env.api.post("/addNewAppKey", body).ok()  # ... that agreed to be boss's app key too
    for path, fields in (
        ("/changeCallbackUrl", {"newCallbackUrl": HOOK, "chainId": 1}),
        ("/setEmailNotifications", {"emailAddress": "both@example.com", "chainId": 1}),
        ("/disableWalletIndex", {"chainId": 1, "walletIndex": 4}),
    ):
        env.clock.advance(1)
        env.api.post(path, salted(env, both, **fields)).error(
            400,
            f"invalid request: ownerAddress: required: the signer {both.address} is an owner "
            f"and an app key of {owner.address}; name the owner this call is for",
        )
        for meant in (both.address, owner.address):
            env.clock.advance(1)
            answer = env.api.post(path, salted(env, both, ownerAddress=meant, **fields))
            assert answer.ok()["ownerAddress"] == meant
    # Nothing was written by the refused calls: the e-mail setting is the named ones' only.
    with env.gateway.storage.transaction() as tx:
        assert tx.get_email(both.address, 1) is not None
        assert tx.get_email(owner.address, 1) is not None
