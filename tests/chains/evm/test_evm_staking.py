"""The staking helpers on anvil, through Flask and Litestar, against a deployed PaycoreStaking.

Each helper's transaction is signed with eth-account and sent raw, as a merchant's wallet
would, and the chain is then read directly: balances, allowance, stake and ETH rewards move
as the helper said they would. The contract's own rules are checked first.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
import pytest
from eth_account.signers.local import LocalAccount
from evm_chain import Deployment
from evm_gateway import ADAPTERS, CHAIN_ID, ETH_ID, Clock, chain_config
from web3.contract import Contract

# isort: split
# On sys.path once evm_gateway is imported: the conformance suite's client and checker.
from conf_api import Api
from conf_schema import problems
from conf_transport import open_transport

from paycore import Gateway, Settings
from paycore.chains.evm import plugin as evm_plugin

pytestmark = pytest.mark.node  # anvil comes from npm

ETH = 10**18
USD = 10**6
SIGNED_FIELDS = ("to", "data", "gas", "gasPrice", "nonce", "value", "chainId")


@attrs.define
class StakingEnv:
    api: Api
    evm: Deployment
    staking: Contract
    paths: dict[str, Any] = attrs.field(factory=dict)

    def checked(self, method: str, path: str, body: dict[str, Any], status: int = 200) -> Any:
        """One helper call (POST JSON, or GET with the same fields as query parameters),
        its answer checked against the served OpenAPI document."""
        if method == "GET":
            query = "&".join(
                f"{k}={','.join(v) if isinstance(v, list) else v}" for k, v in body.items()
            )
            answer = self.api.get(path, query)
        else:
            answer = self.api.post(path, body)
        data = answer.ok(status)
        if not self.paths:
            self.paths = self.api.get("/openapi.json").ok()["paths"]
        schema = self.paths[path][method.lower()]["responses"][str(status)]["content"]
        found = problems(data, schema["application/json"]["schema"])
        assert found == [], (path, found)
        return data

    def send(self, signer: LocalAccount, answer: dict[str, Any]) -> Any:
        """Sign the helper's transaction, after checking its deep link carries the same."""
        tx = answer["transaction"]
        assert tx["from"] == signer.address
        link = urlsplit(answer["walletDeepLink"])
        assert (link.scheme, link.netloc) == ("https", "metamask.app.link")
        assert link.path == f"/send/{tx['to']}@{CHAIN_ID}"
        query = parse_qs(link.query)
        assert query == {"value": [str(int(tx["value"], 16))], "data": [tx["data"]]}
        signed = signer.sign_transaction({k: tx[k] for k in SIGNED_FIELDS})
        w3 = self.evm.chain.w3
        receipt = w3.eth.wait_for_transaction_receipt(
            w3.eth.send_raw_transaction(signed.raw_transaction), timeout=30
        )
        assert receipt["status"] == 1
        return receipt


def _gateway(evm: Deployment, staking: str | None) -> Gateway:
    settings = Settings(
        database_url="memory://",
        prices={ETH_ID: "2000"},
        chains={CHAIN_ID: chain_config(evm)},
        staking_contract=staking,
        staking_chain_id=CHAIN_ID,
    )
    return Gateway(settings, entry_points=False, plugins=[evm_plugin], clock=Clock())


@pytest.fixture(params=ADAPTERS)
def senv(request: pytest.FixtureRequest, evm: Deployment) -> Iterator[StakingEnv]:
    staking = evm.chain.deploy(evm.admin, "PaycoreStaking")
    with ExitStack() as stack:
        gateway = _gateway(evm, staking.address)
        stack.callback(gateway.close)
        transport = stack.enter_context(open_transport(request.param, gateway))
        yield StakingEnv(Api(transport), evm, staking)


def info(senv: StakingEnv, owners: list[str], tokens: list[str], method: str = "POST") -> Any:
    body = {"ownerAddresses": owners, "tokenList": tokens}
    return senv.checked(method, "/mevStakingInfo", body)


def test_stake_unstake_and_claim_move_what_they_say(senv: StakingEnv) -> None:
    evm, staking, token = senv.evm, senv.staking, senv.evm.token
    owner, other = evm.owner, evm.payer
    evm.mint(token, owner.address, 1000 * USD)

    before = info(
        senv, [owner.address, other.address], [token.address, evm.token_no_return.address]
    )
    assert before[owner.address] == {
        "balance": str(evm.chain.balance(owner.address)),
        "tokens": [
            {
                "balance": str(1000 * USD),
                "symbol": "TUSDC",
                "decimals": "6",
                "name": "Test USD Coin",
            },
            {"balance": "0", "symbol": "TUSDT", "decimals": "6", "name": "Test Tether"},
        ],
        "extra": [
            {"staked": "0", "tokenAllowance": "0", "rewards": "0"},
            {"staked": "0", "tokenAllowance": "0"},
        ],
    }
    assert set(before) == {owner.address, other.address}

    # Allowance short: the helper answers with the approve, for exactly the amount.
    ask = {"ownerAddress": owner.address, "chainId": CHAIN_ID, "tokenAddress": token.address,
           "value": str(400 * USD)}  # fmt: skip
    approve = senv.checked("POST", "/mevStake", ask)
    assert approve["transaction"]["isApprove"] is True
    assert approve["transaction"]["to"] == token.address
    senv.send(owner, approve)
    assert token.functions.allowance(owner.address, staking.address).call() == 400 * USD

    stake = senv.checked("GET", "/mevStake", ask)
    assert stake["transaction"]["isApprove"] is False
    assert stake["transaction"]["to"] == staking.address
    senv.send(owner, stake)
    assert staking.functions.stakedOf(token.address, owner.address).call() == 400 * USD
    assert token.functions.balanceOf(owner.address).call() == 600 * USD
    assert token.functions.allowance(owner.address, staking.address).call() == 0

    # Another staker with a quarter of the pool, then 1 ETH of rewards: 0.8 ETH are ours.
    evm.mint(token, other.address, 100 * USD)
    evm.chain.transact(other, token.functions.approve(staking.address, 100 * USD))
    evm.chain.transact(other, staking.functions.stake(token.address, 100 * USD))
    evm.chain.transact(evm.admin, staking.functions.fundRewards(token.address), value=ETH)

    now = info(senv, [owner.address], [token.address], method="GET")[owner.address]
    assert now["extra"] == [{"staked": str(400 * USD), "tokenAllowance": "0",
                             "rewards": str(8 * ETH // 10)}]  # fmt: skip
    assert now["tokens"][0]["balance"] == str(600 * USD)

    unstake = {"ownerAddress": owner.address, "tokenAddress": token.address, "value": 100 * USD}
    senv.send(owner, senv.checked("POST", "/mevUnstake", unstake))
    assert staking.functions.stakedOf(token.address, owner.address).call() == 300 * USD
    assert token.functions.balanceOf(owner.address).call() == 700 * USD
    # Unstaking keeps what was earned.
    assert staking.functions.earned(token.address, owner.address).call() == 8 * ETH // 10

    claim = {"ownerAddress": owner.address, "tokenList": [token.address]}
    eth_before = evm.chain.balance(owner.address)
    receipt = senv.send(owner, senv.checked("POST", "/mevClaim", claim))
    gained = evm.chain.balance(owner.address) - eth_before + evm.chain.gas_cost(receipt)
    assert gained == 8 * ETH // 10
    assert staking.functions.earned(token.address, owner.address).call() == 0
    senv.api.post("/mevClaim", claim).error(
        400, prefix="invalid request: tokenList: " + f"{owner.address} has no rewards"
    )


def test_a_token_whose_transfers_return_nothing_stakes_too(senv: StakingEnv) -> None:
    evm, staking, token = senv.evm, senv.staking, senv.evm.token_no_return
    owner = evm.stranger
    evm.mint(token, owner.address, 50 * USD)
    ask = {"ownerAddress": owner.address, "tokenAddress": token.address, "value": 50 * USD}
    senv.send(owner, senv.checked("POST", "/mevStake", ask))
    senv.send(owner, senv.checked("POST", "/mevStake", ask))
    assert staking.functions.stakedOf(token.address, owner.address).call() == 50 * USD
    senv.send(owner, senv.checked("POST", "/mevUnstake", ask))
    assert token.functions.balanceOf(owner.address).call() == 50 * USD


def test_requests_the_chain_would_refuse_are_400(senv: StakingEnv) -> None:
    evm, token = senv.evm, senv.evm.token
    owner = evm.stranger
    evm.mint(token, owner.address, 5 * USD)
    base = {"ownerAddress": owner.address, "tokenAddress": token.address}
    senv.api.post("/mevStake", {**base, "value": 6 * USD}).error(
        400, prefix="invalid request: value: more than the 5000000 base units"
    )
    senv.api.post("/mevUnstake", {**base, "value": 1}).error(
        400, prefix="invalid request: value: more than the 0 base units"
    )
    senv.api.post("/mevStake", {**base, "value": 1, "chainId": 1}).error(
        400, f"invalid request: chainId: staking runs on chain {CHAIN_ID} only"
    )
    senv.api.post("/mevStake", {**base, "tokenAddress": "0x" + "0" * 40, "value": 1}).error(
        400, prefix="invalid request: tokenAddress: must be an ERC20 token"
    )
    senv.api.post("/mevStakingInfo", {"ownerAddresses": [], "tokenList": [token.address]}).error(
        400, prefix="invalid request: ownerAddresses: required"
    )
    # A token address without code: the node cannot say what it holds.
    nothing = "0x" + "12" * 20
    senv.api.post("/mevStake", {**base, "tokenAddress": nothing, "value": 1}).error(
        400, prefix="invalid request: value: more than the 0 base units"
    )


def test_without_a_deployed_contract_the_helpers_say_so(evm: Deployment) -> None:
    gateway = _gateway(evm, "0x" + "34" * 20)
    with open_transport("core", gateway) as transport:
        Api(transport).post(
            "/mevUnstake",
            {"ownerAddress": evm.owner.address, "tokenAddress": evm.token.address, "value": 1},
        ).error(400, f"invalid request: chainId: no staking contract at 0x{'34' * 20}")
    gateway.close()


# -- the contract's own rules -----------------------------------------------------------------


def test_staking_contract_rules(evm: Deployment) -> None:
    chain, token = evm.chain, evm.token
    staking = chain.deploy(evm.admin, "PaycoreStaking")
    owner, other = evm.owner, evm.payer
    chain.expect_revert(evm.admin, staking.functions.fundRewards(token.address), "NoStakers",
                        value=ETH)  # fmt: skip
    chain.expect_revert(owner, staking.functions.stake(token.address, 0), "ZeroAmount")
    evm.mint(token, owner.address, 10 * USD)
    evm.mint(token, other.address, 30 * USD)
    for who, amount in ((owner, 10 * USD), (other, 30 * USD)):
        chain.transact(who, token.functions.approve(staking.address, amount))
        chain.transact(who, staking.functions.stake(token.address, amount))
    chain.expect_revert(owner, staking.functions.fundRewards(token.address), "NotAdmin", value=ETH)
    chain.expect_revert(
        owner, staking.functions.unstake(token.address, 10 * USD + 1), "InsufficientStake"
    )
    chain.transact(evm.admin, staking.functions.fundRewards(token.address), value=4 * ETH)
    assert staking.functions.earned(token.address, owner.address).call() == ETH
    assert staking.functions.earned(token.address, other.address).call() == 3 * ETH
    # A token listed twice is counted, and paid, once.
    twice = [token.address, token.address]
    assert staking.functions.earnedAll(owner.address, twice).call() == ETH
    before = chain.balance(owner.address)
    receipt = chain.transact(owner, staking.functions.claim(twice))
    assert chain.balance(owner.address) - before + chain.gas_cost(receipt) == ETH
    chain.expect_revert(owner, staking.functions.claim([token.address]), "NothingToClaim")
    # Rewards funded later go by the stake at that moment.
    chain.transact(other, staking.functions.unstake(token.address, 30 * USD))
    chain.transact(evm.admin, staking.functions.fundRewards(token.address), value=ETH)
    assert staking.functions.earned(token.address, owner.address).call() == ETH
    assert staking.functions.earned(token.address, other.address).call() == 3 * ETH
    assert chain.balance(staking.address) == 4 * ETH
