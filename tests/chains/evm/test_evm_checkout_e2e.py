"""The checkout page on a real chain: the payer pays the EIP-681 links the page shows, the
watcher attributes the transfers, and the open page turns partialPaid, then paid.

Nothing here trusts the page's arithmetic: the links are parsed and paid as a wallet would,
so a wrong decimals, token or address in a link shows up as an invoice that stays unpaid.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from checkout_browser_driver import ARTIFACTS, Browser, require_browser, serve  # noqa: E402
from eth_account import Account
from evm_chain import Deployment
from evm_gateway import CHAIN_ID, ETH_ID, USD, drain, make_gateway, pay_native, pay_token, watcher

pytestmark = [pytest.mark.node, pytest.mark.browser]  # anvil, node and chromium

_ADDRESS = r"(0x[0-9a-fA-F]{40})"
NATIVE_LINK = re.compile(rf"ethereum:{_ADDRESS}@(\d+)\?value=(\d+)")
TRANSFER_LINK = re.compile(rf"ethereum:{_ADDRESS}@(\d+)/transfer\?address={_ADDRESS}&uint256=(\d+)")


def test_paying_the_page_links_on_anvil_completes_the_invoice(evm: Deployment) -> None:
    require_browser()
    gateway = make_gateway(evm)
    tusdc = f"{CHAIN_ID}:{evm.token.address}"
    invoice = gateway.create_invoice(
        Account.create().address,
        {
            "value": "10",
            "chainId": CHAIN_ID,
            "description": "Anvil order",
            "acceptedTokens": [tusdc, ETH_ID],
            "data": {"decimals": {tusdc: 6}, "symbol": {tusdc: "TUSDC"}},
        },
    )
    w = watcher(gateway)
    drain(w)
    try:
        with serve("litestar", gateway) as base:
            artifacts = ARTIFACTS / "checkout" / "anvil"
            browser = Browser("pay-link", base, artifacts, guid=invoice.guid, coin="ETH")
            try:
                first = browser.step("rendered")["first"]
                assert first["amountToken"] == "10 TUSDC"
                found = TRANSFER_LINK.fullmatch(first["walletHref"])
                assert found is not None, first["walletHref"]
                token, chain_id, to, units = found.groups()
                assert (token, int(chain_id), to) == (evm.token.address, CHAIN_ID, invoice.address)
                assert int(units) == 10 * USD
                # The payer sends 40% of what the link asks: a part payment.
                pay_token(evm, evm.token, to, int(units) * 4 // 10)
                assert drain(w)[-1].deposits == 1
                browser.next()

                step = browser.step("partial")
                assert step["partial"]["paidVs"] == "$4.00"
                assert step["partial"]["amountToken"] == "6 TUSDC"
                coin = step["coin"]
                assert coin["amountToken"] == "0.003 ETH"  # the other $6 at 2000 USD/ETH
                found = NATIVE_LINK.fullmatch(coin["walletHref"])
                assert found is not None, coin["walletHref"]
                to, chain_id, wei = found.groups()
                assert (to, int(chain_id), int(wei)) == (invoice.address, CHAIN_ID, 3 * 10**15)
                pay_native(evm, to, int(wei))
                assert drain(w)[-1].deposits == 1
                browser.next()

                paid = browser.step("paid")["paid"]
                assert (paid["badge"], paid["paidVs"]) == ("Paid", "$10.00")
                assert len(paid["payments"]) == 2
                done = browser.step("done")
                assert done["problems"] == [] and done["foreign"] == []
            finally:
                browser.close()
        final = gateway.get_invoice(invoice.guid)
        assert (final.status.value, final.paid_amount) == ("paid", Decimal(10))
    finally:
        gateway.close()


def test_pay_with_wallet_sends_the_exact_payment_through_an_injected_wallet(
    evm: Deployment,
) -> None:
    """The page's "Pay with wallet" against an EIP-1193 provider injected by the test: it asks
    the wallet (on another chain) to switch, sends the coin amount the link holds, and the
    page turns paid once the watcher sees the transaction on anvil."""
    require_browser()
    gateway = make_gateway(evm)
    payer = evm.chain.accounts[5].address  # an anvil dev account: unlocked, funded
    invoice = gateway.create_invoice(
        Account.create().address,
        {
            "value": "10",
            "chainId": CHAIN_ID,
            "description": "Wallet order",
            "acceptedTokens": [ETH_ID],
        },
    )
    w = watcher(gateway)
    drain(w)
    try:
        with serve("litestar", gateway) as base:
            artifacts = ARTIFACTS / "checkout" / "wallet"
            browser = Browser(
                "wallet-pay", base, artifacts, guid=invoice.guid, rpc=evm.chain.rpc_url, payer=payer
            )
            try:
                step = browser.step("sent")
                before, sent = step["before"], step["sent"]
                assert before["buttonVisible"] and before["button"] == "Pay with wallet"
                assert before["amountToken"] == "0.005 ETH"  # 10 USD at 2000 USD/ETH
                assert sent["calls"][:3] == [
                    "eth_requestAccounts",
                    "eth_chainId",
                    "wallet_switchEthereumChain",
                ]
                assert "eth_sendTransaction" in sent["calls"]
                assert sent["chain"] == hex(CHAIN_ID)
                assert sent["status"].startswith("Sent from your wallet")
                tx = evm.chain.w3.eth.get_transaction(sent["tx"])
                assert (tx["from"], tx["to"], tx["value"]) == (payer, invoice.address, 5 * 10**15)
                assert drain(w)[-1].deposits == 1
                browser.next()
                paid = browser.step("paid")
                assert paid["paid"]["badge"] == "Paid" and not paid["buttonVisible"]
                done = browser.step("done")
                assert done["problems"] == [] and done["foreign"] == []
            finally:
                browser.close()
        assert gateway.get_invoice(invoice.guid).status.value == "paid"
    finally:
        gateway.close()
