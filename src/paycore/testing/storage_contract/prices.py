"""The price part of the storage contract, on memory, SQLite and PostgreSQL alike: the
price table, locked quotes and parked deposits, exact Decimals, rollback."""

from __future__ import annotations

from decimal import Decimal

import pytest

from paycore.domain.records import Deposit
from paycore.prices.records import LockedQuote, ParkedDeposit, StoredPrice
from paycore.storage import Storage

ETH = "1:0x0000000000000000000000000000000000000000"
USDT = "1:0xdAC17F958D2ee523a2206206994597C13D831ec7"
GUID = "7b0d3b8e-6f0e-4a43-9d2b-2f6c0a1e9a11"


def price(token: str, vs: str, value: str, at: int = 100, source: str = "static") -> StoredPrice:
    return StoredPrice(token, vs, Decimal(value), at, source, at + 1)


def deposit(n: int, chain_id: int = 1, token: str = "0x" + "aa" * 20) -> Deposit:
    return Deposit(
        chain_id=chain_id,
        tx_hash=f"0x{n:064x}",
        log_index=n % 3,
        token=token,
        from_="0x" + "11" * 20,
        to="0x" + "22" * 20,
        amount=Decimal("0.000000000000000001") * n,
        timestamp=1_700_000_000 + n,
        block_number=10 + n,
        block_hash=f"0x{n + 1000:064x}",
    )


def test_prices_are_upserted_per_token_and_currency(storage: Storage) -> None:
    with storage.transaction() as tx:
        tx.put_prices(
            [price(ETH, "usd", "3000"), price(ETH, "eur", "2800"), price(USDT, "usd", "1")]
        )
    with storage.transaction() as tx:
        tx.put_prices([price(ETH, "usd", "3100.123456789012345678", at=200, source="coingecko")])
    with storage.transaction() as tx:
        assert tx.get_prices("usd") == [
            price(ETH, "usd", "3100.123456789012345678", at=200, source="coingecko"),
            price(USDT, "usd", "1"),
        ]
        assert [(p.vs_currency, p.token) for p in tx.get_prices()] == [
            ("eur", ETH),
            ("usd", ETH),
            ("usd", USDT),
        ]
        assert tx.get_price(ETH, "eur") == price(ETH, "eur", "2800")
        assert tx.get_price(ETH, "gbp") is None
    # A price read once and then refreshed: the next read is the new one, never the first.
    with storage.transaction() as tx:
        assert tx.get_price(ETH, "usd") == price(
            ETH, "usd", "3100.123456789012345678", at=200, source="coingecko"
        )
        tx.put_prices([price(ETH, "usd", "3200", at=300)])
        assert tx.get_price(ETH, "usd") == price(ETH, "usd", "3200", at=300)
    with storage.transaction() as tx:
        assert tx.get_price(ETH, "usd") == price(ETH, "usd", "3200", at=300)


def test_a_failed_unit_of_work_writes_no_price(storage: Storage) -> None:
    with pytest.raises(RuntimeError), storage.transaction() as tx:
        tx.put_prices([price(ETH, "usd", "3000")])
        raise RuntimeError("boom")
    with storage.transaction() as tx:
        assert tx.get_prices() == []


def test_locked_quotes_belong_to_their_invoice(storage: Storage) -> None:
    quotes = [
        LockedQuote(GUID, USDT, "usd", Decimal("0.9998"), 100, "coingecko"),
        LockedQuote(GUID, ETH, "usd", Decimal("3000.5"), 90, "chainlink"),
    ]
    with storage.transaction() as tx:
        tx.put_quotes(quotes)
        tx.put_quotes([LockedQuote("other", ETH, "usd", Decimal(1), 1, "static")])
    with storage.transaction() as tx:
        assert tx.get_quotes(GUID) == sorted(quotes, key=lambda q: q.token)
        assert tx.get_quotes("nobody") == []


def test_parked_deposits_keep_their_order_and_park_once(storage: Storage) -> None:
    first, second, elsewhere = deposit(1), deposit(2, token="0x" + "bb" * 20), deposit(3, 56)
    with storage.transaction() as tx:
        assert tx.park_deposit(ParkedDeposit(second, "no usd price", 5))
        assert tx.park_deposit(ParkedDeposit(first, "no usd price", 6))
        assert tx.park_deposit(ParkedDeposit(elsewhere, "stale", 7))
        assert not tx.park_deposit(ParkedDeposit(first, "again", 8))
    with storage.transaction() as tx:
        assert tx.parked_deposits(1, 10) == [
            ParkedDeposit(second, "no usd price", 5),
            ParkedDeposit(first, "no usd price", 6),
        ]
        assert tx.parked_deposits(1, 1) == [ParkedDeposit(second, "no usd price", 5)]
        assert tx.parked_tokens() == sorted(
            {f"1:{'0x' + 'aa' * 20}", f"1:{'0x' + 'bb' * 20}", f"56:{'0x' + 'aa' * 20}"}
        )
        assert tx.unpark_deposit(second)
        assert not tx.unpark_deposit(second)
    with storage.transaction() as tx:
        assert tx.parked_deposits(1, 10) == [ParkedDeposit(first, "no usd price", 6)]
