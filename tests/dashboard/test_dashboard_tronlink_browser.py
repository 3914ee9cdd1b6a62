""" "Sign in with TronLink" in a real Chromium: a TronLink stand-in whose signMessageV2 is
TronWeb in Node holding the Tron owner's key (tests/node/dashboard_tronlink_browser.mjs).

The server is the judge: it registers the session key only if the signature recovers to the
base58 owner, and it lists that owner's invoices only to calls the session key signed. The
page must offer TronLink alone (no Ethereum wallet is injected), sign in, list the owner's
invoices and not another owner's, keep the session over a reload, and sign out.
Screenshots land in test-artifacts/dashboard/tronlink/.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from checkout_browser_driver import (  # noqa: E402
    ARTIFACTS,
    CHROMIUM,
    ROOT,
    require_browser,
    serve,
)
from checkout_helpers import OWNER as EVM_OWNER  # noqa: E402
from checkout_helpers import make_gateway  # noqa: E402
from coincurve import PrivateKey

from paycore import NATIVE, ChainConfig
from paycore.auth.session import is_active
from paycore.auth.signatures import public_key_to_address
from paycore.domain.tokens import tron_from_hex

pytestmark = [pytest.mark.node, pytest.mark.browser]

SCRIPT = ROOT / "tests" / "node" / "dashboard_tronlink_browser.mjs"
TRON = 728126428
TRX = f"{TRON}:{NATIVE}"
DEPOSITS = ["TJRabPrwbZy45sbavfcjinPJC18kjpRTv8", "TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf"]


def test_a_tron_owner_signs_in_with_tronlink_and_sees_its_invoices() -> None:
    require_browser()
    key = PrivateKey()
    owner = tron_from_hex(public_key_to_address(key.public_key.format(compressed=False)))
    tron = ChainConfig(TRON, "tron-mainnet", 19, None, "TRX", 6)
    gateway = make_gateway(chains={TRON: tron}, prices={TRX: "0.12"})
    try:
        mine = [
            gateway.create_invoice(
                owner,
                {
                    "value": "25",
                    "chainId": TRON,
                    "description": f"Order {n}",
                    "acceptedTokens": [TRX],
                    "address": address,
                },
            )
            for n, address in enumerate(DEPOSITS)
        ]
        theirs = gateway.create_invoice(
            EVM_OWNER,
            {
                "value": "25",
                "chainId": TRON,
                "description": "Not mine",
                "acceptedTokens": [TRX],
                "address": DEPOSITS[0],
            },
        )
        with serve("litestar", gateway) as base:
            config = {
                "base": base,
                "chromium": CHROMIUM,
                "ownerKey": key.secret.hex(),
                "artifacts": str(ARTIFACTS / "dashboard" / "tronlink"),
            }
            run = subprocess.run(
                ["node", str(SCRIPT), json.dumps(config)],
                capture_output=True,
                text=True,
                cwd=ROOT,
                timeout=180,
                check=False,
            )
        assert run.returncode == 0, run.stderr[-3000:]
        result = json.loads(run.stdout.strip().splitlines()[-1])
        assert result["problems"] == []
        assert result["owner"] == owner
        assert result["buttons"] == [["sign-in-tron", "Sign in with TronLink"]]
        registrations = [
            r for r in result["requests"] if r["url"].endswith("/auth/register-pubkey")
        ]
        assert len(registrations) == 1
        body = json.loads(registrations[0]["body"])
        assert body["ownerAddress"] == owner
        # TronLink was asked for the account, then to sign exactly the registered key's text
        assert result["tronCalls"] == [
            {"method": "tron_requestAccounts"},
            {"method": "signMessageV2", "message": body["publicKey"]},
        ]
        assert result["ownerShown"] == owner
        assert result["session"]["owner"] == owner
        expected = sorted(f"#/invoice/{i.guid}" for i in mine)
        assert sorted(result["listed"]) == expected
        assert f"#/invoice/{theirs.guid}" not in result["listed"]
        assert sorted(result["listedAfterReload"]) == expected
        assert result["signedOut"] is None
        # the invoices were asked for as this owner's, and the key is gone afterwards
        listed = [r for r in result["requests"] if "/invoices?" in r["url"]]
        assert listed and all(owner in r["url"] for r in listed)
        with gateway.storage.transaction() as tx:  # one key, registered, then deregistered
            (kept,) = tx.session_keys_of(owner)
        assert kept.public_key == body["publicKey"]
        assert not is_active(kept, int(time.time()))
    finally:
        gateway.close()
