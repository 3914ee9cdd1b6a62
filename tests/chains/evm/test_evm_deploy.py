"""``paycore contracts deploy`` on anvil: the factory (and PaycoreBatchPay next to it) through
the deterministic CREATE2 deployer (anvil has it from genesis), at the address computed
offline, with the named admin; the unsigned deployment a hardware wallet signs; the plain
fallback; the command itself."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from eth_account import Account
from evm_chain import Chain, error_selector
from hexbytes import HexBytes
from web3.exceptions import ContractLogicError

from paycore import ChainConfig
from paycore.chains.deploy import FactoryArgs, config_python, deploy_factory, factory_args
from paycore.chains.evm import create2
from paycore.chains.evm.deploy import (
    BATCH_PAY_SALT,
    DEPLOYER,
    batch_pay_address,
    create_address,
    factory_address,
)
from paycore.contracts import load_artifact
from paycore.errors import InvalidInput
from paycore.runtime.cli import main

ETH = 10**18


def _config(chain: Chain, **fields: Any) -> ChainConfig:
    return ChainConfig(chain.chain_id, "anvil", 0, chain.rpc_url, **fields)


def _key(chain: Chain, index: int) -> str:
    return "0x" + bytes(chain.accounts[index].key).hex()


def _args(chain: Chain, admin: int = 6, recipient: int = 7, fee: int = 10**15) -> FactoryArgs:
    return FactoryArgs(
        admin=chain.accounts[admin].address,
        fee_recipient=chain.accounts[recipient].address,
        fee=fee,
        max_fee=ETH,
        prefix=0xFF,
    )


def test_the_factory_lands_where_computed_offline_with_the_named_admin(
    anvil_chain: Chain,
) -> None:
    chain = anvil_chain
    args = _args(chain)
    with chain.isolated():
        assert chain.w3.eth.get_code(DEPLOYER) != b""  # anvil's predeployed proxy
        done = deploy_factory(_config(chain), args, key=_key(chain, 5))
        assert done.method == "create2" and not done.existed and done.tx_hash
        assert done.address == factory_address(args)
        factory = chain.contract("PaycoreFactory", done.address)
        # The admin is the argument, not the sender (account 5) nor the deployer contract.
        assert factory.functions.admin().call() == chain.accounts[6].address
        assert factory.functions.feeSettings().call() == [chain.accounts[7].address, 10**15]
        assert factory.functions.maxWithdrawFee().call() == ETH
        assert factory.functions.create2Prefix().call() == b"\xff"
        # The admin can change the fee; the sender cannot.
        chain.expect_revert(chain.accounts[5], factory.functions.setFee(DEPLOYER, 1), "NotAdmin")
        chain.transact(chain.accounts[6], factory.functions.setFee(chain.accounts[8].address, 7))
        # Wallets under it are where paycore derives them, without a node.
        owner = chain.accounts[9]
        chain.transact(owner, factory.functions.deployWallet(owner.address))
        wallet = create2.wallet_address(done.address, owner.address)
        assert chain.w3.eth.get_code(wallet) != b""
        # Deploying the same arguments again finds it and sends nothing.
        nonce = chain.w3.eth.get_transaction_count(chain.accounts[5].address)
        again = deploy_factory(_config(chain), args, key=_key(chain, 5))
        assert (again.existed, again.address, again.tx_hash) == (True, done.address, None)
        assert chain.w3.eth.get_transaction_count(chain.accounts[5].address) == nonce
        # Another salt, or another admin, is another address.
        other = deploy_factory(_config(chain), args, key=_key(chain, 5), salt=b"\x01".rjust(32))
        assert other.address not in (done.address, factory_address(_args(chain, admin=8)))


def test_an_unsigned_deployment_is_signed_elsewhere_and_lands_at_the_same_address(
    anvil_chain: Chain,
) -> None:
    """What a hardware wallet gets: a complete transaction for its address; whoever sends
    it, the factory's address is the same (it depends on the arguments only)."""
    chain = anvil_chain
    args = _args(chain)
    with chain.isolated():
        first = deploy_factory(_config(chain), args, sender=chain.accounts[5].address)
        second = deploy_factory(_config(chain), args, sender=chain.accounts[8].address)
        assert first.address == second.address == factory_address(args)
        assert first.tx_hash is None and first.unsigned is not None
        tx = first.unsigned
        assert tx["to"] == DEPLOYER and tx["chainId"] == chain.chain_id and tx["value"] == "0x0"
        assert tx["data"].endswith(args.init_code().hex()) and tx["data"][2:66] == "00" * 32
        assert chain.w3.eth.get_code(first.address) == b""  # nothing was sent
        # The "hardware wallet": any signer that takes these fields as they are.
        fields = {k: v for k, v in tx.items() if k != "from"}
        fields |= {"gas": int(tx["gas"], 16), "gasPrice": int(tx["gasPrice"], 16), "value": 0}
        signed = Account.from_key(chain.accounts[5].key).sign_transaction(fields)
        receipt = chain.w3.eth.wait_for_transaction_receipt(
            chain.w3.eth.send_raw_transaction(signed.raw_transaction)
        )
        assert receipt["status"] == 1
        assert chain.w3.eth.get_code(first.address) != b""
        # PaycoreBatchPay: the sender's next transaction, to its one address.
        assert first.batch_pay is not None and first.batch_pay.unsigned is not None
        batch_tx = first.batch_pay.unsigned
        assert first.batch_pay.address == batch_pay_address()
        assert batch_tx["nonce"] == tx["nonce"] + 1 and batch_tx["to"] == DEPLOYER
        assert batch_tx["data"][2:66] == BATCH_PAY_SALT.hex()
        fields = {k: v for k, v in batch_tx.items() if k != "from"}
        fields |= {
            "gas": int(batch_tx["gas"], 16),
            "gasPrice": int(batch_tx["gasPrice"], 16),
            "value": 0,
        }
        signed = Account.from_key(chain.accounts[5].key).sign_transaction(fields)
        chain.w3.eth.wait_for_transaction_receipt(
            chain.w3.eth.send_raw_transaction(signed.raw_transaction)
        )
        assert chain.w3.eth.get_code(batch_pay_address()) != b""


def test_without_the_deployer_it_falls_back_to_a_plain_deployment_unless_required(
    anvil_chain: Chain,
) -> None:
    chain = anvil_chain
    args = _args(chain)
    with chain.isolated():
        plain = deploy_factory(_config(chain), args, key=_key(chain, 5), create2=False)
        assert plain.method == "create"
        factory = chain.contract("PaycoreFactory", plain.address)
        assert factory.functions.admin().call() == chain.accounts[6].address
    with chain.isolated():
        chain.w3.provider.make_request("anvil_setCode", [DEPLOYER, "0x"])  # type: ignore[arg-type]
        with pytest.raises(InvalidInput, match="has no deterministic deployer"):
            deploy_factory(_config(chain), args, key=_key(chain, 5), create2=True)
        sender = chain.accounts[5].address
        expected = create_address(sender, chain.w3.eth.get_transaction_count(sender))
        fallback = deploy_factory(_config(chain), args, key=_key(chain, 5))
        assert (fallback.method, fallback.address) == ("create", expected)
        assert chain.w3.eth.get_code(expected) != b""


def test_refusals_before_anything_is_sent(anvil_chain: Chain) -> None:
    chain = anvil_chain
    config = _config(chain)
    key = _key(chain, 5)
    with pytest.raises(InvalidInput, match="above maxFee"):
        factory_args(
            config,
            admin=chain.accounts[6].address,
            fee_recipient=chain.accounts[7].address,
            fee=Decimal(2),
            max_fee=Decimal(1),
        )
    with pytest.raises(InvalidInput, match="zero address cannot administer"):
        _args(chain).__class__("0x" + "00" * 20, chain.accounts[7].address, 0, 1, 0xFF)
    wrong_chain = ChainConfig(1, "ethereum", 12, chain.rpc_url)
    with pytest.raises(InvalidInput, match="the node answers for chain 31337, not 1"):
        deploy_factory(wrong_chain, _args(chain), key=key)
    with pytest.raises(InvalidInput, match="the key is 0x"):
        deploy_factory(config, _args(chain), key=key, sender=chain.accounts[8].address)
    with pytest.raises(InvalidInput, match="not a 32-byte hex private key") as raised:
        deploy_factory(config, _args(chain), key=key[:-2])
    assert key[4:40] not in str(raised.value)
    poor = "0x" + "11" * 32  # an account with no ETH: said before anything is signed
    with pytest.raises(InvalidInput, match="holds 0 wei; the deployment may cost up to"):
        deploy_factory(config, _args(chain), key=poor)
    assert chain.w3.eth.get_code(factory_address(_args(chain))) == b""


def test_the_constructor_refuses_a_zero_admin(anvil_chain: Chain) -> None:
    chain = anvil_chain
    artifact = load_artifact("PaycoreFactory")
    zero = "0x" + "00" * 20
    build = chain.w3.eth.contract(abi=artifact["abi"], bytecode=artifact["bytecode"])
    data = build.constructor(zero, zero, 0, 1, b"\xff").build_transaction(
        {"from": chain.accounts[5].address, "gas": 5_000_000}
    )["data"]
    with pytest.raises(ContractLogicError) as raised:
        chain.w3.eth.call({"from": chain.accounts[5].address, "data": data})
    assert HexBytes(str(raised.value.data))[:4] == error_selector(artifact["abi"], "ZeroAddress")


def test_the_command_deploys_and_prints_a_config_that_works(
    anvil_chain: Chain, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    chain = anvil_chain
    monkeypatch.setenv(
        "PAYCORE_CHAINS",
        json.dumps({"31337": {"name": "anvil", "confirmations": 0, "rpc_url": chain.rpc_url}}),
    )
    base = ["contracts", "deploy", "--chain-id", "31337", "--max-fee", "1", "--fee", "0.001"]
    with chain.isolated():
        monkeypatch.delenv("PAYCORE_DEPLOYER_KEY", raising=False)
        assert main(base) == 2
        assert "set PAYCORE_DEPLOYER_KEY" in capsys.readouterr().err
        assert main([*base, "--unsigned"]) == 2
        assert "--unsigned needs --from" in capsys.readouterr().err
        monkeypatch.setenv("PAYCORE_DEPLOYER_KEY", "0x1234")
        assert main(base) == 2
        assert "key: not a 32-byte hex private key" in capsys.readouterr().err

        monkeypatch.setenv("DEPLOY_KEY", _key(chain, 5))
        admin = chain.accounts[6].address
        assert main([*base, "--key-env", "DEPLOY_KEY", "--admin", admin]) == 0
        out = capsys.readouterr().out
        expected = factory_address(
            FactoryArgs(admin, admin, 10**15, ETH, 0xFF)  # the fee goes to the admin by default
        )
        assert f"deployed at {expected} through the deterministic CREATE2 deployer" in out
        assert "fee            0.001 ETH per withdrawal" in out
        assert _key(chain, 5)[2:] not in out
        entry = json.loads(out.strip().splitlines()[-1])
        pasted = ChainConfig(chain_id=31337, **entry["31337"])
        assert pasted.factory == expected and pasted.rpc_url == chain.rpc_url
        assert f'factory="{expected}"' in out  # the Python form names the same
        # PaycoreBatchPay came in the same run, to its one address, and the config names it.
        batch = batch_pay_address()
        assert f"PaycoreBatchPay deployed at {batch}" in out
        assert pasted.batch_pay == batch and f'batch_pay="{batch}"' in out
        code = chain.w3.eth.get_code(batch)
        assert code != b"" and code.hex() in load_artifact("PaycoreBatchPay")["deployedBytecode"]
        nonce = chain.w3.eth.get_transaction_count(chain.accounts[5].address)
        assert main([*base, "--key-env", "DEPLOY_KEY", "--admin", admin]) == 0
        out = capsys.readouterr().out
        assert f"already deployed at {expected}: nothing sent" in out
        assert f"PaycoreBatchPay already deployed at {batch}: nothing sent" in out
        assert chain.w3.eth.get_transaction_count(chain.accounts[5].address) == nonce
        again = json.loads(out.strip().splitlines()[-1])["31337"]
        assert (again["factory"], again["batch_pay"]) == (expected, batch)

        sender = chain.accounts[8].address
        assert main([*base, "--unsigned", "--from", sender, "--max-fee", "2"]) == 0
        out = capsys.readouterr().out
        start = out.index("{\n")
        unsigned = json.loads(out[start : out.index("\n}\n", start) + 2])
        assert unsigned["from"] == sender and unsigned["to"] == DEPLOYER


def test_the_pasted_config_completes_tokens_from_the_registry() -> None:
    config = ChainConfig(
        8453, "base", 10, "https://base.example/v3/0123456789abcdef0123456789abcdef"
    )
    from paycore.chains.deploy import configured_chain

    text = config_python(configured_chain(config, "0x" + "ab" * 20))
    assert '"symbol": "USDC", "decimals": 6' in text
    assert "0123456789abcdef0123456789abcdef" not in text  # the URL's key is not printed
