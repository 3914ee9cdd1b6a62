"""Strict addresses over HTTP, on every path that takes one, through all three transports.

Found by comparing paycore with TronWeb: a Tron address with a trailing newline, tab,
space or no-break space was accepted by /getAddress (200) and stored with it, and
/auth/register-pubkey answered 401 "signer does not match" for a correct signature. Now
every such address is a 400 naming the field and the character, before any signature is
looked at. The gateway serves a Tron and an EVM chain; nothing here reaches a node (the
refusals come first), so the node URLs point nowhere.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any
from urllib.parse import quote

import pytest
import tron_env  # noqa: F401 - first: it puts the conformance helpers on sys.path
from conf_api import Api
from conf_keys import account, public_key_of, session, sign_text
from conf_transport import TRANSPORTS, adapter_missing, open_transport
from tron_env import CHAIN_ID, FACTORY, USDT, address_of, key, tronlink_sign

from paycore import NATIVE, ChainConfig, Gateway, Settings
from paycore.chains.evm import plugin as evm_plugin
from paycore.chains.tron import plugin as tron_plugin

EVM_CHAIN = 31337
EVM_FACTORY = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
NOWHERE = "http://127.0.0.1:9"
TRX_ID = f"{CHAIN_ID}:{NATIVE}"

#: The characters of the finding, and the invisible ones a paste can bring along.
STRAY = ["\n", " ", "\t", "\u00a0", "\r", "\u2028", "\u200b", "\ufeff", "\u3000"]


def _code(ch: str) -> str:
    return f"U+{ord(ch):04X}"


@pytest.fixture(params=TRANSPORTS)
def api(request: pytest.FixtureRequest) -> Iterator[Api]:
    reason = adapter_missing(request.param)
    if reason is not None:
        pytest.skip(reason)
    settings = Settings(
        database_url="memory://",
        prices={TRX_ID: "0.25", f"{EVM_CHAIN}:{NATIVE}": "2000"},
        chains={
            CHAIN_ID: ChainConfig(
                CHAIN_ID, "tron-nile", rpc_url=NOWHERE, factory=FACTORY, tokens=(USDT,)
            ),
            EVM_CHAIN: ChainConfig(EVM_CHAIN, "anvil", rpc_url=NOWHERE, factory=EVM_FACTORY),
        },
    )
    with ExitStack() as stack:
        gateway = Gateway(settings, entry_points=False, plugins=[tron_plugin, evm_plugin])
        stack.callback(gateway.close)
        yield Api(stack.enter_context(open_transport(request.param, gateway)))


def refused(answer: Any, field: str, ch: str) -> None:
    """A 400 on ``field`` that names the character (trailing, as the tests append it)."""
    answer.error(
        400,
        f"invalid request: {field}: has trailing "
        f"{'whitespace' if ch.isspace() else 'invisible character'} {_code(ch)}",
    )


@pytest.mark.parametrize("ch", STRAY, ids=_code)
def test_every_address_field_refuses_surrounding_whitespace(api: Api, ch: str) -> None:
    tron_owner_key = key("strict")
    tron_owner = address_of(tron_owner_key)
    evm_owner = account("strict-evm")

    # /getAddress, both chains, body and query: the finding's 200.
    for chain_id, owner in ((CHAIN_ID, tron_owner), (EVM_CHAIN, evm_owner.address)):
        body = {"ownerAddress": owner, "chainId": chain_id, "index": 0}
        good = api.post("/getAddress", body).ok()
        assert good["depositAddress"] and ch not in good["depositAddress"]
        refused(api.post("/getAddress", {**body, "ownerAddress": owner + ch}), "ownerAddress", ch)
        query = f"ownerAddress={quote(owner + ch)}&chainId={chain_id}&index=0"
        refused(api.get("/getAddress", query), "ownerAddress", ch)

    # /auth/register-pubkey: a correct signature by that owner, so 400, not 401.
    client = session(f"strict:{_code(ch)}")
    public_key = public_key_of(client.key)
    for owner, signature in (
        (tron_owner, tronlink_sign(tron_owner_key, public_key)),
        (evm_owner.address, sign_text(evm_owner, public_key)),
    ):
        body = {"ownerAddress": owner, "publicKey": public_key, "signature": signature}
        refused(
            api.post("/auth/register-pubkey", {**body, "ownerAddress": owner + ch}),
            "ownerAddress",
            ch,
        )
    registered = {
        "ownerAddress": tron_owner,
        "publicKey": public_key,
        "signature": tronlink_sign(tron_owner_key, public_key),
    }
    assert api.post("/auth/register-pubkey", registered).ok()["ownerAddress"] == tron_owner

    # POST /invoice: the deposit address, the owner claimed, an accepted token.
    invoice = {"value": "10", "chainId": CHAIN_ID, "description": "x", "acceptedTokens": [TRX_ID]}
    deposit = api.post(
        "/getAddress", {"ownerAddress": tron_owner, "chainId": CHAIN_ID, "index": 7}
    ).ok()["depositAddress"]
    for field, changed in (
        ("address", {"address": deposit + ch}),
        ("owner", {"owner": tron_owner + ch}),
        ("acceptedTokens[0]", {"acceptedTokens": [f"{CHAIN_ID}:{USDT}{ch}"]}),
        ("token", {"token": TRX_ID + ch}),
    ):
        refused(api.post("/invoice", {**invoice, **changed}, session=client), field, ch)
    created = api.post("/invoice", {**invoice, "address": deposit}, session=client).ok(201)
    assert created["address"] == deposit

    # Reads by address or owner: the query parameters.
    refused(
        api.get("/invoices", f"address={quote(deposit + ch)}&chainId={CHAIN_ID}"), "address", ch
    )
    assert api.get("/invoices", f"address={deposit}&chainId={CHAIN_ID}").ok()
    uri = f"owner={quote(tron_owner + ch)}"
    refused(api.get("/invoices", uri, session=client), "owner", ch)
    refused(api.get("/transactions", uri, session=client), "owner", ch)
    refused(api.get("/auth/pubkeys", uri, session=client), "owner", ch)

    # Wallet helpers that take a recipient or a token.
    withdraw = {"ownerAddress": tron_owner, "chainId": CHAIN_ID, "amount": "1"}
    refused(
        api.post(
            "/initWithdraw",
            {**withdraw, "tokenAddress": NATIVE, "to": tron_owner + ch},
            session=client,
        ),
        "to",
        ch,
    )
    refused(
        api.post(
            "/initWithdraw",
            {**withdraw, "tokenAddress": USDT + ch, "to": tron_owner},
            session=client,
        ),
        "tokenAddress",
        ch,
    )

    # Owner-signed and management calls.
    signed_owner = {"ownerAddress": evm_owner.address + ch, "signature": "0x" + "11" * 65}
    refused(api.post("/webhook/get", signed_owner), "ownerAddress", ch)
    refused(api.post("/poll/register", signed_owner), "ownerAddress", ch)
    refused(api.post("/invoice/challenge", {"address": tron_owner + ch}), "address", ch)
    refused(api.post("/getAppKeys", {"ownerAddress": tron_owner + ch}), "ownerAddress", ch)
    salted = {"salt": 1, "signature": "0x" + "11" * 65}
    refused(
        api.post("/addNewAppKey", {**salted, "appKeyAddress": evm_owner.address + ch}),
        "appKeyAddress",
        ch,
    )
    refused(
        api.post(
            "/disableWalletIndex",
            {
                **salted,
                "ownerAddress": evm_owner.address + ch,
                "walletIndex": 1,
                "chainId": EVM_CHAIN,
            },
        ),
        "ownerAddress",
        ch,
    )

    # Only the well-formed invoice reached storage, spelled as sent.
    listed = api.get("/invoices", f"owner={tron_owner}", session=client).ok()
    assert [(i["address"], i["owner"]) for i in listed] == [(deposit, tron_owner)]
