"""Where a new Tron watcher starts: before the oldest watched invoice, found by block time.

The same rule as on EVM (``ChainWatcher._first_cursor``): with no ``start_block``, a
watcher's first pass must not start at the head, or a deposit made between an invoice's
creation and that pass is never counted. Tron blocks come every 3 s; the stand-in stamps
block ``n`` at ``GENESIS_MS + 3000 n``, and the gateway's clock is set to that time line.
"""

from __future__ import annotations

import time

from fake_trongrid import BLOCK_MS, GENESIS_MS, serve
from tron_env import (
    CHAIN_ID,
    PAYER,
    USD,
    USDT,
    address_of,
    drain,
    key,
    make_chain,
    make_gateway,
    watcher,
)

from paycore.chains.watching import FIRST_PASS_MARGIN


def test_a_deposit_made_before_the_first_pass_counts() -> None:
    chain = make_chain(first_block=0, blocks=400)
    with serve(chain) as url:
        gateway = make_gateway(url, chain, start_block=None)
        head_time = (GENESIS_MS + chain.head.number * BLOCK_MS) / 1000
        gateway.clock.offset = head_time - time.time()  # type: ignore[attr-defined]
        owner = address_of(key("merchant"))
        body = {
            "value": "10",
            "chainId": CHAIN_ID,
            "description": "early",
            "acceptedTokens": [f"{CHAIN_ID}:{USDT}"],
        }
        invoice = gateway.create_invoice(owner, body)
        chain.send_trc20(USDT, address_of(PAYER), invoice.address, 10 * USD)
        chain.mine(3)  # the payment's block, and two confirmations
        reports = drain(watcher(gateway))
        try:
            assert sum(r.deposits for r in reports) == 1
            moment = invoice.created_at - FIRST_PASS_MARGIN
            expected = max(
                n for n in range(chain.head.number) if GENESIS_MS + n * BLOCK_MS < moment * 1000
            )
            assert reports[0].scanned_from == expected + 1
            with gateway.storage.transaction() as tx:
                stored = tx.get_invoice(invoice.guid)
            assert stored is not None and stored.status.value == "paid"
        finally:
            gateway.close()
