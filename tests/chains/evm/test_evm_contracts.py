"""paycore's contracts on a real chain (anvil): who may do what, what moves where, what it costs.

Every transaction is signed locally and sent raw; every expected failure is checked twice,
by eth_call for the custom error's name and by a mined transaction with status 0.
Each test starts from the same deployment (factory with a 0.001 ETH fee, two 6-decimal
tokens) and its changes are rolled back after it (``evm`` fixture).
"""

from __future__ import annotations

import pytest
from eth_account import Account
from evm_chain import Deployment, error_selector
from hexbytes import HexBytes
from web3 import Web3
from web3.contract import Contract
from web3.exceptions import ContractLogicError, Web3RPCError
from web3.logs import DISCARD
from web3.types import TxReceipt

from paycore.chains.evm import create2
from paycore.contracts import load_artifact

pytestmark = pytest.mark.node  # anvil comes from npm

NATIVE = "0x0000000000000000000000000000000000000000"
ETH = 10**18
USD = 10**6  # both test tokens have 6 decimals


def _events(contract: Contract, name: str, receipt: TxReceipt) -> list[dict[str, object]]:
    """The decoded ``name`` events ``contract`` emitted in ``receipt``, as plain dicts."""
    logs = contract.events[name]().process_receipt(receipt, errors=DISCARD)
    return [dict(log["args"]) for log in logs if log["address"] == contract.address]


def _code(evm: Deployment, address: str) -> bytes:
    return bytes(evm.chain.w3.eth.get_code(Web3.to_checksum_address(address)))


def _pay_token(evm: Deployment, token: Contract, to: str, amount: int) -> None:
    """The payer mints and sends ``amount`` of ``token`` to ``to``, as a customer would pay."""
    evm.mint(token, evm.payer.address, amount)
    evm.chain.transact(evm.payer, token.functions.transfer(to, amount))


# ---------------------------------------------------------------------------- addresses


def test_wallet_address_is_known_before_deployment(evm: Deployment) -> None:
    owner = evm.owner.address
    offline = create2.wallet_address(evm.factory.address, owner)
    assert evm.factory.functions.walletAddress(owner).call() == offline
    assert _code(evm, offline) == b""

    receipt = evm.chain.transact(evm.owner, evm.factory.functions.deployWallet(owner))
    assert _events(evm.factory, "WalletDeployed", receipt) == [{"owner": owner, "wallet": offline}]
    wallet = evm.chain.contract("PaycoreWallet", offline)
    assert _code(evm, offline) != b""
    assert wallet.functions.owner().call() == owner
    assert wallet.functions.factory().call() == evm.factory.address


def test_anyone_may_deploy_a_wallet_for_its_owner_once(evm: Deployment) -> None:
    """A sponsored deployment is fine: the owner comes from the argument, not the sender."""
    owner = evm.owner.address
    evm.chain.transact(evm.stranger, evm.factory.functions.deployWallet(owner))
    wallet = evm.wallet_of(owner)
    assert wallet.functions.owner().call() == owner
    assert wallet.functions.appKeys().call() == []
    evm.chain.expect_revert(evm.owner, evm.factory.functions.deployWallet(owner), "WalletExists")
    evm.chain.expect_revert(evm.owner, evm.factory.functions.deployWallet(NATIVE), "ZeroAddress")


def test_deposit_addresses_match_the_offline_computation(evm: Deployment) -> None:
    wallet = evm.deploy_wallet()
    assert wallet.functions.forwarderInitCodeHash().call() == create2.forwarder_init_code_hash()
    for index in (0, 1, 2, 1000, 2**64, 2**255, 2**256 - 1):
        on_chain = wallet.functions.depositAddress(index).call()
        assert on_chain == create2.deposit_address(wallet.address, index)
        assert on_chain == create2.owner_deposit_address(
            evm.factory.address, evm.owner.address, index
        )


# ---------------------------------------------------------------------------- sweeping


def test_native_deposit_is_swept_and_so_is_a_second_one(evm: Deployment) -> None:
    chain, index = evm.chain, 5
    # The customer pays before the merchant has deployed anything: the address is pure math.
    deposit = create2.owner_deposit_address(evm.factory.address, evm.owner.address, index)
    chain.send_value(evm.payer, deposit, 3 * ETH // 10)
    wallet = evm.deploy_wallet()
    to = chain.accounts[5].address
    start = chain.balance(to)

    receipt = chain.transact(
        evm.owner, wallet.functions.withdraw(NATIVE, to, 3 * ETH // 10, [index]), value=evm.fee
    )
    assert chain.balance(to) - start == 3 * ETH // 10
    assert chain.balance(deposit) == 0 and _code(evm, deposit) != b""
    collected = {"index": index, "forwarder": deposit, "token": NATIVE, "amount": 3 * ETH // 10}
    assert _events(wallet, "Collected", receipt) == [collected]
    withdrawn = {"token": NATIVE, "to": to, "amount": 3 * ETH // 10, "fee": evm.fee}
    assert _events(wallet, "Withdrawn", receipt) == [withdrawn]
    forwarder = chain.contract("PaycoreForwarder", deposit)
    assert forwarder.functions.wallet().call() == wallet.address

    # A second payment to the same, now deployed, address is not stuck.
    chain.send_value(evm.payer, deposit, ETH // 10)
    assert chain.balance(deposit) == ETH // 10
    chain.transact(
        evm.owner, wallet.functions.withdraw(NATIVE, to, ETH // 10, [index]), value=evm.fee
    )
    assert chain.balance(to) - start == 4 * ETH // 10
    assert chain.balance(deposit) == 0


@pytest.mark.parametrize("token_name", ["token", "token_no_return"])
def test_erc20_deposit_is_swept_and_so_is_a_second_one(evm: Deployment, token_name: str) -> None:
    """Both a bool-returning token and a USDT-like one that returns nothing."""
    chain, index = evm.chain, 9
    token: Contract = getattr(evm, token_name)
    assert token.functions.decimals().call() == 6
    wallet = evm.deploy_wallet()
    deposit = create2.deposit_address(wallet.address, index)
    _pay_token(evm, token, deposit, 25 * USD)
    chain.send_value(evm.payer, deposit, ETH // 100)  # native coin at the same address
    to = chain.accounts[5].address

    receipt = chain.transact(
        evm.owner, wallet.functions.withdraw(token.address, to, 25 * USD, [index]), value=evm.fee
    )
    assert token.functions.balanceOf(to).call() == 25 * USD
    assert token.functions.balanceOf(deposit).call() == 0
    assert _events(wallet, "Collected", receipt) == [
        {"index": index, "forwarder": deposit, "token": token.address, "amount": 25 * USD}
    ]
    # Only the withdrawn token moved; the native coin waits for a native withdrawal.
    assert chain.balance(deposit) == ETH // 100

    _pay_token(evm, token, deposit, 5 * USD)
    chain.transact(
        evm.owner, wallet.functions.withdraw(token.address, to, 5 * USD, [index]), value=evm.fee
    )
    assert token.functions.balanceOf(to).call() == 30 * USD
    assert token.functions.balanceOf(deposit).call() == 0

    chain.transact(
        evm.owner, wallet.functions.withdraw(NATIVE, to, ETH // 100, [index]), value=evm.fee
    )
    assert chain.balance(deposit) == 0


def test_one_withdrawal_collects_many_indexes(evm: Deployment) -> None:
    wallet = evm.deploy_wallet()
    for index in (0, 1, 2):
        _pay_token(
            evm, evm.token, create2.deposit_address(wallet.address, index), (index + 1) * USD
        )
    to = evm.chain.accounts[5].address
    receipt = evm.chain.transact(
        evm.owner,
        wallet.functions.withdraw(evm.token.address, to, 6 * USD, [0, 1, 2]),
        value=evm.fee,
    )
    assert evm.token.functions.balanceOf(to).call() == 6 * USD
    assert [e["amount"] for e in _events(wallet, "Collected", receipt)] == [USD, 2 * USD, 3 * USD]


def test_deposit_straight_to_the_wallet_is_withdrawable(evm: Deployment) -> None:
    """contractType `wallet`: the wallet address itself takes payments; no index needed."""
    wallet = evm.deploy_wallet()
    evm.chain.send_value(evm.payer, wallet.address, ETH // 5)
    _pay_token(evm, evm.token, wallet.address, 7 * USD)
    to = evm.chain.accounts[5].address
    start = evm.chain.balance(to)
    evm.chain.transact(
        evm.owner, wallet.functions.withdraw(NATIVE, to, ETH // 5, []), value=evm.fee
    )
    evm.chain.transact(
        evm.owner, wallet.functions.withdraw(evm.token.address, to, 7 * USD, []), value=evm.fee
    )
    assert evm.chain.balance(to) - start == ETH // 5
    assert evm.token.functions.balanceOf(to).call() == 7 * USD


def test_only_the_wallet_can_sweep_a_forwarder(evm: Deployment) -> None:
    wallet = evm.deploy_wallet()
    deposit = create2.deposit_address(wallet.address, 3)
    evm.chain.send_value(evm.payer, deposit, ETH // 10)
    evm.chain.transact(
        evm.owner, wallet.functions.withdraw(NATIVE, evm.owner.address, 0, [3]), value=evm.fee
    )
    evm.chain.send_value(evm.payer, deposit, ETH // 10)
    forwarder = evm.chain.contract("PaycoreForwarder", deposit)
    for sender in (evm.stranger, evm.owner):
        evm.chain.expect_revert(sender, forwarder.functions.sweep(NATIVE), "NotWallet")
    assert evm.chain.balance(deposit) == ETH // 10


def test_paying_more_than_the_wallet_holds_reverts(evm: Deployment) -> None:
    wallet = evm.deploy_wallet()
    _pay_token(evm, evm.token, create2.deposit_address(wallet.address, 0), USD)
    call = wallet.functions.withdraw(evm.token.address, evm.owner.address, USD + 1, [0])
    evm.chain.expect_revert(evm.owner, call, "TransferFailed", value=evm.fee)
    call = wallet.functions.withdraw(evm.token.address, NATIVE, USD, [0])
    evm.chain.expect_revert(evm.owner, call, "ZeroAddress", value=evm.fee)


# ---------------------------------------------------------------------------- who may withdraw


def test_only_the_owner_or_an_app_key_can_withdraw(evm: Deployment) -> None:
    chain = evm.chain
    wallet = evm.deploy_wallet()
    chain.send_value(evm.payer, create2.deposit_address(wallet.address, 1), ETH)
    to = chain.accounts[5].address
    half = wallet.functions.withdraw(NATIVE, to, ETH // 2, [1])
    for outsider in (evm.stranger, evm.admin, evm.fee_recipient, evm.payer):
        chain.expect_revert(outsider, half, "NotOwnerOrAppKey", value=evm.fee)

    app_key = chain.accounts[6]
    chain.transact(evm.owner, wallet.functions.addAppKey(app_key.address))
    start = chain.balance(to)
    chain.transact(app_key, half, value=evm.fee)
    chain.transact(evm.owner, half, value=evm.fee)
    assert chain.balance(to) - start == ETH


# ---------------------------------------------------------------------------- app keys


def test_the_owner_creates_the_first_app_key_which_then_acts_for_the_owner(evm: Deployment) -> None:
    chain = evm.chain
    wallet = evm.deploy_wallet()
    first, second = chain.accounts[6], chain.accounts[7]
    chain.expect_revert(
        evm.stranger, wallet.functions.addAppKey(evm.stranger.address), "NotOwnerOrAppKey"
    )
    chain.expect_revert(first, wallet.functions.addAppKey(first.address), "NotOwnerOrAppKey")

    receipt = chain.transact(evm.owner, wallet.functions.addAppKey(first.address))
    assert _events(wallet, "AppKeyAdded", receipt) == [
        {"key": first.address, "addedBy": evm.owner.address}
    ]
    receipt = chain.transact(first, wallet.functions.addAppKey(second.address))
    assert _events(wallet, "AppKeyAdded", receipt) == [
        {"key": second.address, "addedBy": first.address}
    ]
    assert wallet.functions.appKeys().call() == [first.address, second.address]
    assert wallet.functions.isAppKey(second.address).call()

    chain.expect_revert(evm.owner, wallet.functions.addAppKey(first.address), "AppKeyExists")
    chain.expect_revert(second, wallet.functions.addAppKey(NATIVE), "ZeroAddress")


def test_at_most_ten_app_keys(evm: Deployment) -> None:
    wallet = evm.deploy_wallet()
    assert wallet.functions.MAX_APP_KEYS().call() == 10
    keys = [Account.create().address for _ in range(11)]
    for key in keys[:10]:
        evm.chain.transact(evm.owner, wallet.functions.addAppKey(key))
    evm.chain.expect_revert(evm.owner, wallet.functions.addAppKey(keys[10]), "TooManyAppKeys")

    evm.chain.transact(evm.owner, wallet.functions.removeAppKey(keys[3]))
    evm.chain.transact(evm.owner, wallet.functions.addAppKey(keys[10]))
    assert sorted(wallet.functions.appKeys().call()) == sorted(keys[:3] + keys[4:])


def test_only_the_owner_removes_app_keys(evm: Deployment) -> None:
    chain = evm.chain
    wallet = evm.deploy_wallet()
    first, second = chain.accounts[6], chain.accounts[7]
    chain.transact(evm.owner, wallet.functions.addAppKey(first.address))
    chain.transact(first, wallet.functions.addAppKey(second.address))
    for sender in (first, second, evm.stranger):
        chain.expect_revert(sender, wallet.functions.removeAppKey(first.address), "NotOwner")

    receipt = chain.transact(evm.owner, wallet.functions.removeAppKey(first.address))
    assert _events(wallet, "AppKeyRemoved", receipt) == [{"key": first.address}]
    assert wallet.functions.appKeys().call() == [second.address]
    assert not wallet.functions.isAppKey(first.address).call()
    chain.expect_revert(evm.owner, wallet.functions.removeAppKey(first.address), "UnknownAppKey")
    # The removed key has lost every right.
    call = wallet.functions.withdraw(NATIVE, first.address, 0, [])
    chain.expect_revert(first, call, "NotOwnerOrAppKey", value=evm.fee)
    chain.expect_revert(first, wallet.functions.disableWalletIndex(1), "NotOwnerOrAppKey")


# ---------------------------------------------------------------------------- disabled indexes


def test_a_disabled_index_is_skipped_until_enabled(evm: Deployment) -> None:
    chain = evm.chain
    wallet = evm.deploy_wallet()
    one, two = (create2.deposit_address(wallet.address, i) for i in (1, 2))
    _pay_token(evm, evm.token, one, USD)
    _pay_token(evm, evm.token, two, 2 * USD)
    to = chain.accounts[5].address

    chain.expect_revert(evm.stranger, wallet.functions.disableWalletIndex(2), "NotOwnerOrAppKey")
    receipt = chain.transact(evm.owner, wallet.functions.disableWalletIndex(2))
    assert _events(wallet, "WalletIndexDisabled", receipt) == [{"index": 2}]
    assert wallet.functions.isWalletIndexDisabled(2).call()

    receipt = chain.transact(
        evm.owner, wallet.functions.withdraw(evm.token.address, to, USD, [1, 2]), value=evm.fee
    )
    assert [e["index"] for e in _events(wallet, "Collected", receipt)] == [1]
    assert evm.token.functions.balanceOf(two).call() == 2 * USD  # its funds stay
    assert _code(evm, two) == b""  # not even deployed
    skipped = wallet.functions.withdraw(evm.token.address, to, 2 * USD, [2])
    chain.expect_revert(evm.owner, skipped, "TransferFailed", value=evm.fee)

    app_key = chain.accounts[6]
    chain.transact(evm.owner, wallet.functions.addAppKey(app_key.address))
    receipt = chain.transact(app_key, wallet.functions.enableWalletIndex(2))
    assert _events(wallet, "WalletIndexEnabled", receipt) == [{"index": 2}]
    chain.transact(app_key, skipped, value=evm.fee)
    assert evm.token.functions.balanceOf(to).call() == 3 * USD
    assert evm.token.functions.balanceOf(two).call() == 0


# ---------------------------------------------------------------------------- the fee


def test_the_fee_reaches_the_fee_recipient(evm: Deployment) -> None:
    chain = evm.chain
    wallet = evm.deploy_wallet()
    chain.send_value(evm.payer, create2.deposit_address(wallet.address, 0), ETH)
    to = chain.accounts[5].address
    recipient_start = chain.balance(evm.fee_recipient.address)
    owner_start = chain.balance(evm.owner.address)
    extra = 12_345

    receipt = chain.transact(
        evm.owner, wallet.functions.withdraw(NATIVE, to, ETH // 2, [0]), value=evm.fee + extra
    )
    assert chain.balance(evm.fee_recipient.address) - recipient_start == evm.fee
    assert _events(wallet, "Withdrawn", receipt)[0]["fee"] == evm.fee
    # What msg.value brought beyond the fee stays in the owner's own wallet.
    assert chain.balance(wallet.address) == ETH // 2 + extra
    spent = owner_start - chain.balance(evm.owner.address)
    assert spent == evm.fee + extra + chain.gas_cost(receipt)


def test_a_withdrawal_below_the_fee_reverts_and_moves_nothing(evm: Deployment) -> None:
    chain = evm.chain
    wallet = evm.deploy_wallet()
    deposit = create2.deposit_address(wallet.address, 0)
    chain.send_value(evm.payer, deposit, ETH)
    recipient_start = chain.balance(evm.fee_recipient.address)
    call = wallet.functions.withdraw(NATIVE, evm.owner.address, ETH, [0])
    for value in (0, evm.fee - 1):
        chain.expect_revert(evm.owner, call, "FeeNotPaid", value=value)
    assert chain.balance(deposit) == ETH and _code(evm, deposit) == b""
    assert chain.balance(evm.fee_recipient.address) == recipient_start


def test_an_owner_without_native_funds_cannot_withdraw(evm: Deployment) -> None:
    """Deposits need no native coin; withdrawing does, for gas and the fee (docs/interface.md)."""
    chain = evm.chain
    fee = ETH  # large enough that gas money alone is visibly not enough
    chain.transact(evm.admin, evm.factory.functions.setFee(evm.fee_recipient.address, fee))
    owner = Account.create()
    chain.transact(evm.stranger, evm.factory.functions.deployWallet(owner.address))
    wallet = evm.wallet_of(owner.address)
    _pay_token(evm, evm.token, create2.deposit_address(wallet.address, 0), 10 * USD)
    chain.send_value(evm.payer, owner.address, ETH // 20)  # gas money, far below the fee

    call = wallet.functions.withdraw(evm.token.address, owner.address, 10 * USD, [0])
    chain.expect_revert(owner, call, "FeeNotPaid", value=0)
    with pytest.raises(Web3RPCError, match="(?i)insufficient funds"):
        chain.transact(owner, call, value=fee)
    assert evm.token.functions.balanceOf(owner.address).call() == 0

    chain.send_value(evm.payer, owner.address, fee)
    chain.transact(owner, call, value=fee)
    assert evm.token.functions.balanceOf(owner.address).call() == 10 * USD


def test_a_factory_cannot_start_above_its_fee_cap(evm: Deployment) -> None:
    artifact = load_artifact("PaycoreFactory")
    factory = evm.chain.w3.eth.contract(abi=artifact["abi"], bytecode=artifact["bytecode"])
    deploy = factory.constructor(evm.admin.address, evm.fee_recipient.address, 2, 1, b"\xff")
    data = deploy.build_transaction({"from": evm.admin.address, "gas": 5_000_000})["data"]
    with pytest.raises(ContractLogicError) as raised:
        evm.chain.w3.eth.call({"from": evm.admin.address, "data": data})
    assert HexBytes(str(raised.value.data))[:4] == error_selector(artifact["abi"], "FeeTooHigh")
    receipt = evm.chain.send_tx(evm.admin, {"data": data, "gas": 5_000_000})
    assert receipt["status"] == 0 and receipt["gasUsed"] < 5_000_000


def test_a_factory_refuses_a_create2_prefix_of_no_known_vm(evm: Deployment) -> None:
    artifact = load_artifact("PaycoreFactory")
    factory = evm.chain.w3.eth.contract(abi=artifact["abi"], bytecode=artifact["bytecode"])
    deploy = factory.constructor(evm.admin.address, evm.fee_recipient.address, 0, 1, b"\x42")
    data = deploy.build_transaction({"from": evm.admin.address, "gas": 5_000_000})["data"]
    with pytest.raises(ContractLogicError) as raised:
        evm.chain.w3.eth.call({"from": evm.admin.address, "data": data})
    selector = error_selector(artifact["abi"], "UnknownCreate2Prefix")
    assert HexBytes(str(raised.value.data))[:4] == selector


def test_wallets_copy_the_factory_prefix(evm: Deployment) -> None:
    wallet = evm.deploy_wallet()
    assert evm.factory.functions.create2Prefix().call() == b"\xff"
    assert wallet.functions.create2Prefix().call() == b"\xff"


def test_fee_settings_belong_to_the_factory_admin(evm: Deployment) -> None:
    chain = evm.chain
    factory = evm.factory
    assert factory.functions.feeSettings().call() == [evm.fee_recipient.address, evm.fee]
    new_recipient, new_admin = chain.accounts[8], chain.accounts[9]
    chain.expect_revert(evm.stranger, factory.functions.setFee(evm.stranger.address, 0), "NotAdmin")
    chain.expect_revert(evm.owner, factory.functions.changeAdmin(evm.owner.address), "NotAdmin")

    receipt = chain.transact(
        evm.admin, factory.functions.setFee(new_recipient.address, 2 * evm.fee)
    )
    assert _events(factory, "FeeChanged", receipt) == [
        {"recipient": new_recipient.address, "fee": 2 * evm.fee}
    ]
    wallet = evm.deploy_wallet()
    call = wallet.functions.withdraw(NATIVE, evm.owner.address, 0, [])
    chain.expect_revert(evm.owner, call, "FeeNotPaid", value=evm.fee)
    start = chain.balance(new_recipient.address)
    chain.transact(evm.owner, call, value=2 * evm.fee)
    assert chain.balance(new_recipient.address) - start == 2 * evm.fee

    # No recipient means no fee, whatever the amount says.
    chain.transact(evm.admin, factory.functions.setFee(NATIVE, 5 * evm.fee))
    receipt = chain.transact(evm.owner, call, value=0)
    assert _events(wallet, "Withdrawn", receipt)[0]["fee"] == 0

    # The cap is fixed at deployment: not even the admin can go past it.
    assert factory.functions.maxWithdrawFee().call() == evm.max_fee
    too_high = factory.functions.setFee(new_recipient.address, evm.max_fee + 1)
    chain.expect_revert(evm.admin, too_high, "FeeTooHigh")
    chain.transact(evm.admin, factory.functions.setFee(new_recipient.address, evm.max_fee))

    chain.transact(evm.admin, factory.functions.changeAdmin(new_admin.address))
    assert factory.functions.admin().call() == new_admin.address
    chain.expect_revert(evm.admin, factory.functions.setFee(NATIVE, 0), "NotAdmin")
    chain.transact(new_admin, factory.functions.setFee(new_recipient.address, 1))
