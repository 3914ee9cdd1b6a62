"""Salt-signed management calls on anvil, through Flask and Litestar: paycore's records change
at once, and the returned wallet transaction -- signed with eth-account and sent raw -- brings
the wallet contract in line with them.

- /disableWalletIndex: /initWithdraw leaves the index out before the on-chain call is sent,
  and after it; /enableWalletIndex puts it back.
- App keys: the owner adds the first, an app key adds the next (and sends that transaction
  itself), only the owner removes; /getAppKeys tells which keys the wallet holds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from eth_account import Account
from eth_account.messages import encode_defunct
from eth_account.signers.local import LocalAccount
from evm_chain import Deployment
from evm_gateway import ADAPTERS, CHAIN_ID, USD, Env, drain, open_env, watcher
from web3.contract import Contract

pytestmark = pytest.mark.node  # anvil comes from npm

SIGNED_FIELDS = ("to", "data", "gas", "gasPrice", "nonce", "value", "chainId")


@pytest.fixture(params=ADAPTERS)
def env(request: pytest.FixtureRequest, evm: Deployment) -> Iterator[Env]:
    with open_env(request.param, evm) as opened:
        yield opened


class Signer:
    """Salt-signed bodies of one key, each with a fresh salt (the gateway's clock)."""

    def __init__(self, env: Env, account: LocalAccount, acts_for: str | None = None) -> None:
        self.env = env
        self.account = account
        self.address = account.address
        #: the owner an app key's consent names when this key adds one
        self.acts_for = acts_for or account.address
        self._salt = 0

    def body(self, **fields: Any) -> dict[str, Any]:
        # Never the same salt twice: equal bodies sign alike, and a second one is a replay.
        self._salt = max(self.env.gateway.now(), self._salt + 1)
        key = fields.get("appKeyAddress")
        if isinstance(key, LocalAccount):
            # A new app key agrees to act for the owner (docs/management.md §App keys).
            owner = str(fields.get("ownerAddress") or self.acts_for).lower()
            text = f"accept-app-key:{owner}:{key.address.lower()}:{int(self._salt)}"
            consent = key.sign_message(encode_defunct(text=text)).signature
            fields = {
                **fields,
                "appKeyAddress": key.address,
                "appKeySignature": "0x" + bytes(consent).hex(),
            }
        body = {"salt": self._salt, **fields}
        text = json.dumps(body, separators=(",", ":"))
        signature = self.account.sign_message(encode_defunct(text=text)).signature
        return {**body, "signature": "0x" + bytes(signature).hex()}

    def post(self, path: str, **fields: Any) -> Any:
        return self.env.api.post(path, self.body(**fields))


def funded(env: Env, account: LocalAccount | None = None) -> LocalAccount:
    """A key with coin for gas (anvil's dev key 5 pays)."""
    account = account or Account.create()
    env.evm.chain.send_value(env.evm.chain.accounts[5], account.address, 10**18)
    return account


def send(env: Env, signer: LocalAccount, tx: dict[str, Any]) -> None:
    assert tx["from"] == signer.address
    signed = signer.sign_transaction({k: tx[k] for k in SIGNED_FIELDS})
    receipt = env.w3.eth.wait_for_transaction_receipt(
        env.w3.eth.send_raw_transaction(signed.raw_transaction), timeout=30
    )
    assert receipt["status"] == 1


def deployed_owner(env: Env) -> tuple[LocalAccount, Any, Contract]:
    """A merchant with a session key and a deployed wallet."""
    owner, key = env.merchant()
    funded(env, owner)
    env.evm.chain.transact(owner, env.evm.factory.functions.deployWallet(owner.address))
    return owner, key, env.evm.wallet_of(owner.address)


def test_a_disabled_index_is_left_out_of_withdrawals(env: Env) -> None:
    token = env.evm.token
    owner, key, wallet = deployed_owner(env)
    usdc = f"{CHAIN_ID}:{token.address}"
    invoices = [
        env.api.post(
            "/invoice",
            {"value": "10", "chainId": CHAIN_ID, "description": f"#{n}", "acceptedTokens": [usdc]},
            session=key,
        ).ok(201)
        for n in range(3)
    ]
    for invoice in invoices:
        env.pay_token(token, invoice["address"], 10 * USD)
    drain(watcher(env.gateway))
    me = Signer(env, owner)

    disabled = env.checked(
        "POST",
        "/disableWalletIndex",
        me.post("/disableWalletIndex", chainId=CHAIN_ID, walletIndex=1),
    )
    assert disabled["disabled"] is True and disabled["changed"] is True
    assert disabled["onChain"] == {
        "chainId": CHAIN_ID,
        "walletAddress": wallet.address,
        "deployed": True,
        "inSync": False,
    }
    tx = disabled["transaction"]
    assert (tx["to"], tx["from"]) == (wallet.address, owner.address)

    ask = {
        "to": Account.create().address,
        "ownerAddress": owner.address,
        "tokenAddress": token.address,
        "chainId": CHAIN_ID,
    }
    # paycore's record counts at once, before the wallet knows.
    built = env.api.post("/initWithdraw", {**ask, "amount": "20"}, session=key).ok()
    assert built["indexes"] == [0, 2]
    env.api.post("/initWithdraw", {**ask, "amount": "21"}, session=key).error(
        400, prefix="invalid request: amount: more than the 20 TUSDC available"
    )

    send(env, owner, tx)
    assert wallet.functions.isWalletIndexDisabled(1).call() is True
    again = me.post("/disableWalletIndex", chainId=CHAIN_ID, walletIndex=1).ok()
    assert (again["changed"], again["transaction"], again["onChain"]["inSync"]) == (
        False,
        None,
        True,
    )
    built = env.api.post("/initWithdraw", {**ask, "amount": "20"}, session=key).ok()
    assert built["indexes"] == [0, 2]

    enabled = me.post("/enableWalletIndex", chainId=CHAIN_ID, walletIndex=1).ok()
    assert enabled["disabled"] is False and enabled["changed"] is True
    # The wallet still skips it until the enabling call is mined: so does /initWithdraw.
    assert env.api.post("/initWithdraw", {**ask, "amount": "20"}, session=key).ok()["indexes"] == [
        0,
        2,
    ]
    send(env, owner, enabled["transaction"])
    assert wallet.functions.isWalletIndexDisabled(1).call() is False
    built = env.api.post("/initWithdraw", {**ask, "amount": "30"}, session=key).ok()
    assert built["indexes"] == [0, 1, 2]
    send(env, owner, built)
    assert token.functions.balanceOf(ask["to"]).call() == 30 * USD


def test_app_keys_kept_in_step_with_the_wallet(env: Env) -> None:
    owner, _key, wallet = deployed_owner(env)
    first, second, third = funded(env), funded(env), funded(env)
    me, app = Signer(env, owner), Signer(env, first, acts_for=owner.address)

    # The first key comes from the owner: a stranger naming the owner is refused.
    Signer(env, first).post(
        "/addNewAppKey", appKeyAddress=first, chainId=CHAIN_ID, ownerAddress=owner.address
    ).error(403, f"forbidden: {first.address} is neither {owner.address} nor one of its app keys")

    added = env.checked(
        "POST",
        "/addNewAppKey",
        me.post("/addNewAppKey", appKeyAddress=first, chainId=CHAIN_ID),
    )
    assert added["appKey"]["address"] == first.address
    assert added["appKey"]["addedBy"] == owner.address
    assert added["transaction"]["from"] == owner.address  # the wallet knows no app key yet
    send(env, owner, added["transaction"])
    assert wallet.functions.isAppKey(first.address).call() is True

    # Now the app key acts for the owner, and the wallet takes the call from it directly.
    by_key = app.post("/addNewAppKey", appKeyAddress=second, chainId=CHAIN_ID).ok()
    assert by_key["ownerAddress"] == owner.address
    assert by_key["appKey"]["addedBy"] == first.address
    assert by_key["transaction"]["from"] == first.address
    send(env, first, by_key["transaction"])
    assert wallet.functions.isAppKey(second.address).call() is True

    index = app.post("/disableWalletIndex", chainId=CHAIN_ID, walletIndex=7).ok()
    send(env, first, index["transaction"])
    assert wallet.functions.isWalletIndexDisabled(7).call() is True

    app.post("/removeAppKey", appKeyAddress=second.address, chainId=CHAIN_ID).error(
        403, "forbidden: only the owner removes app keys"
    )
    removed = env.checked(
        "POST",
        "/removeAppKey",
        me.post("/removeAppKey", appKeyAddress=second.address, chainId=CHAIN_ID),
    )
    assert removed["removed"] is True and removed["transaction"]["from"] == owner.address
    send(env, owner, removed["transaction"])
    assert wallet.functions.isAppKey(second.address).call() is False

    # A key the owner added on chain without paycore shows up, and can be adopted.
    env.evm.chain.transact(owner, wallet.functions.addAppKey(third.address))
    listed = env.checked(
        "POST",
        "/getAppKeys",
        env.api.post("/getAppKeys", {"ownerAddress": owner.address, "chainId": CHAIN_ID}),
    )
    assert [(k["address"], k["onChain"], k["addedBy"]) for k in listed] == [
        (first.address, True, owner.address),
        (third.address, True, None),
    ]
    env.clock.advance(1)  # "oldest first" ties within one second break on the address
    adopted = me.post("/addNewAppKey", appKeyAddress=third, chainId=CHAIN_ID).ok()
    assert adopted["transaction"] is None and adopted["onChain"]["inSync"] is True
    me.post("/addNewAppKey", appKeyAddress=third, chainId=CHAIN_ID).error(
        409, f"Conflict: {third.address} is already an app key of {owner.address}"
    )
    plain = env.api.post("/getAppKeys", {"ownerAddress": owner.address}).ok()
    assert [k["address"] for k in plain] == [first.address, third.address]
    assert all("onChain" not in k for k in plain)

    # Removing from paycore only (no chainId) leaves the wallet as it is; asking again
    # for the chain gives the transaction that catches the wallet up.
    me.post("/removeAppKey", appKeyAddress=third.address).ok()
    catch_up = me.post("/removeAppKey", appKeyAddress=third.address, chainId=CHAIN_ID).ok()
    assert catch_up["removed"] is False and catch_up["transaction"] is not None
    send(env, owner, catch_up["transaction"])
    me.post("/removeAppKey", appKeyAddress=third.address, chainId=CHAIN_ID).error(
        404, f"app key {third.address} not found"
    )


def test_a_change_the_wallet_would_refuse_is_refused_whole(env: Env) -> None:
    owner, _key, wallet = deployed_owner(env)
    me = Signer(env, owner)
    for _ in range(10):  # the wallet fills up with keys paycore never heard of
        env.evm.chain.transact(owner, wallet.functions.addAppKey(Account.create().address))
    me.post("/addNewAppKey", appKeyAddress=Account.create(), chainId=CHAIN_ID).error(
        409, prefix=f"Conflict: the wallet {wallet.address} on chain {CHAIN_ID} refuses addAppKey"
    )
    assert env.api.post("/getAppKeys", {"ownerAddress": owner.address}).ok() == []


def test_a_wallet_owner_unknown_to_paycore_is_known_by_its_wallet(env: Env) -> None:
    owner = funded(env)
    env.evm.chain.transact(owner, env.evm.factory.functions.deployWallet(owner.address))
    me = Signer(env, owner)
    # Without a chain to look at, paycore has nothing on this owner.
    me.post("/addNewAppKey", appKeyAddress=Account.create()).error(
        403, prefix=f"forbidden: the signer {owner.address} is neither an owner known"
    )
    key = Account.create()
    added = me.post("/addNewAppKey", appKeyAddress=key, chainId=CHAIN_ID).ok()
    assert added["appKey"]["address"] == key.address
    # No wallet, no invoice, no key: nobody paycore acts for.
    stranger = funded(env)
    Signer(env, stranger).post("/disableWalletIndex", chainId=CHAIN_ID, walletIndex=0).error(
        403, prefix="forbidden: the signer"
    )


def test_before_the_wallet_is_deployed_the_calls_are_storage_only(env: Env) -> None:
    owner, _key = env.merchant()  # known by its session key; no wallet yet
    me = Signer(env, owner)
    key = Account.create()
    not_yet = {
        "chainId": CHAIN_ID,
        "walletAddress": env.evm.wallet_of(owner.address).address,
        "deployed": False,
        "inSync": False,
    }
    added = me.post("/addNewAppKey", appKeyAddress=key, chainId=CHAIN_ID).ok()
    assert (added["transaction"], added["onChain"]) == (None, not_yet)
    me.post("/addNewAppKey", appKeyAddress=key, chainId=CHAIN_ID).error(
        409, f"Conflict: {key.address} is already an app key of {owner.address}"
    )
    unknown = Account.create().address
    me.post("/removeAppKey", appKeyAddress=unknown, chainId=CHAIN_ID).error(
        404, f"app key {unknown} not found"
    )
    index = me.post("/disableWalletIndex", chainId=CHAIN_ID, walletIndex=0).ok()
    assert (index["changed"], index["transaction"], index["onChain"]) == (True, None, not_yet)
