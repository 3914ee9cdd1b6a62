"""The TRC20 batch payout call, checked against TronWeb: the rows of a CSV for Tron mainnet
(base58 recipients, TRX and USDT), checked by paycore's rows reader and encoded by
``paycore.chains.tron.payouts``, give byte for byte the calldata TronWeb's own ABI encoder
makes of the same base58 arguments (``tests/node/tronweb_oracle.mjs``, ``calldataV2``)."""

from __future__ import annotations

import pytest
from node_oracles import run_oracle

from paycore import Settings
from paycore.chains.tron import payouts as tron_payouts
from paycore.contracts import load_artifact
from paycore.domain.tokens import NATIVE
from paycore.payouts.rows import BadRows, check_rows, csv_rows

pytestmark = pytest.mark.node

TRON = 728126428
USDT = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"
PAY_ABI = next(e for e in load_artifact("PaycoreBatchPay")["abi"] if e.get("name") == "pay")


def test_the_batch_call_is_what_tronweb_encodes() -> None:
    settings = Settings()
    csv = (
        "reference,amount,token,address\n"
        "a-1,12.5,USDT,TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf\n"
        "a-2,3,TRX,TJRabPrwbZy45sbavfcjinPJC18kjpRTv8\n"
        f"a-3,0.000001,{USDT},TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf\n"
    )
    rows = check_rows(settings, TRON, csv_rows(csv))
    assert [(r.token, r.value) for r in rows] == [
        (USDT, 12_500_000),
        (NATIVE, 3_000_000),
        (USDT, 1),
    ]
    ref = bytes(range(32))
    task = {
        "op": "calldataV2",
        "signature": tron_payouts.PAY,
        "abi": PAY_ABI,
        "values": [
            "0x" + ref.hex(),
            # TronWeb takes the TRX rows' zero address in its hex form, the others base58.
            [r.token if r.token != NATIVE else "410000000000000000000000000000000000000000"
             for r in rows],
            [r.to for r in rows],
            [str(r.value) for r in rows],
        ],
    }  # fmt: skip
    [answer] = run_oracle("tronweb_oracle.mjs", "tronweb", [task])
    assert tron_payouts.pay_data(ref, rows).hex() == answer["data"]
    assert answer["data"].endswith(tron_payouts.pay_parameter(ref, rows))
    assert tron_payouts.call_value(rows) == 3_000_000


def test_bad_tron_rows_are_named_by_line() -> None:
    csv = "address,token,amount\nTXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBx,USDT,1\nhello,TRX,1\n"
    with pytest.raises(BadRows) as refused:
        check_rows(Settings(), TRON, csv_rows(csv))
    assert refused.value.text.splitlines() == [
        "invalid request: rows: 2 bad row(s)",
        "line 2: address: not a valid Tron base58 address",
        "line 3: address: not a valid Tron hex address (41... or 0x...)",
    ]
