"""Builders for the records the storage tests write, with every field set to something
non-default so a column that is dropped or mangled shows up as an inequality."""

from __future__ import annotations

from decimal import Decimal

from sqlalchemy.engine import URL

from paycore.domain.records import (
    Invoice,
    Payment,
    RateSource,
    Refund,
    RefundStatus,
    SessionKey,
    Status,
    Transaction,
    TxType,
)

OWNER = "0x1111111111111111111111111111111111111111"
OTHER_OWNER = "0x2222222222222222222222222222222222222222"
DEPOSIT = "0x3333333333333333333333333333333333333333"
USDT = "0xdAC17F958D2ee523a2206206994597C13D831ec7"
NATIVE = "0x0000000000000000000000000000000000000000"
TINY = Decimal("0.000000000000000001")
BIG = Decimal("123456789012345678.123456789")


class FakeClock:
    """Unix seconds that only move when a test says so."""

    def __init__(self, now: float = 1_700_000_000) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def payment(tx_hash: str = "0xaa", log_index: int = 3, amount: Decimal = TINY) -> Payment:
    return Payment(
        tx_hash=tx_hash,
        log_index=log_index,
        chain_id=1,
        token=USDT,
        from_="0x4444444444444444444444444444444444444444",
        amount=amount,
        vs_value=BIG,
        timestamp=1_700_000_100,
    )


def insert_before_0012(url: URL, record: Invoice) -> None:
    """An invoice row as a database before revision 0012 held it (no checkout column): today's
    SqlStorage writes every column of today's table, so older schemas get a plain insert."""
    from paycore_storage.engine import make_engine
    from paycore_storage.rows import invoice_row
    from paycore_storage.tables import invoices

    row = {k: v for k, v in invoice_row(record).items() if k not in ("checkout", "search_text")}
    engine = make_engine(url)
    try:
        with engine.begin() as connection:
            connection.execute(invoices.insert().values(row))
    finally:
        engine.dispose()


def invoice(
    guid: str = "00000000-0000-4000-8000-000000000001",
    *,
    created_at: int = 1_700_000_000,
    owner: str = OWNER,
    chain_id: int = 1,
    address: str = DEPOSIT,
    status: Status = Status.INIT,
    deadline: int | None = None,
    value: Decimal = BIG,
) -> Invoice:
    return Invoice(
        guid=guid,
        created_at=created_at,
        deadline=created_at + 3600 if deadline is None else deadline,
        status=status,
        value=value,
        token=f"{chain_id}:{USDT}",
        chain_id=chain_id,
        description="two coffees, ünïcode",
        address=address,
        owner=owner,
        accepted_tokens=(f"{chain_id}:{USDT}", f"{chain_id}:{NATIVE}"),
        data={"order": 42, "nested": {"list": [1, "two", None, True]}},
        paid_amount=TINY,
        payments=(payment(),),
        vs_currency="eur",
    )


def transaction(
    tx_hash: str = "0xbb",
    *,
    log_index: int = 0,
    chain_id: int = 1,
    token: str = USDT,
    owner: str = OWNER,
    timestamp: int = 1_700_000_200,
    amount: Decimal = BIG,
    type: TxType = TxType.DEPOSIT,
) -> Transaction:
    deposit = type is TxType.DEPOSIT
    return Transaction(
        type=type,
        tx_hash=tx_hash,
        log_index=log_index,
        chain_id=chain_id,
        token=token,
        from_="0x5555555555555555555555555555555555555555",
        amount=amount,
        vs_value=TINY,
        timestamp=timestamp,
        owner=owner,
        to=None if deposit else "0x6666666666666666666666666666666666666666",
        guid="00000000-0000-4000-8000-000000000001" if deposit else None,
        counted=deposit,
    )


def session_key(
    address: str = "0x7777777777777777777777777777777777777777",
    *,
    owner: str = OWNER,
    registered_at: int = 1_700_000_000,
    last_seen_nonce: int = 0,
) -> SessionKey:
    return SessionKey(
        address=address,
        public_key="0x04" + "ab" * 64,
        owner=owner,
        registered_at=registered_at,
        expires_at=registered_at + 30 * 24 * 3600,
        last_seen_nonce=last_seen_nonce,
        encryption_public_key="0x04" + "cd" * 64,
    )


def refund(guid: str, number: int) -> Refund:
    """Refund ``number`` of invoice ``guid``, pending; its id and creation time follow
    ``number``, so refunds made in order are read back in that order."""
    return Refund(
        id=f"refund-{number}",
        guid=guid,
        owner=OWNER,
        chain_id=1,
        token=USDT,
        to="0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        amount=Decimal("1.5"),
        vs_value=Decimal("1.5"),
        rate=Decimal("1"),
        rate_source=RateSource.PAYMENT,
        status=RefundStatus.PENDING,
        created_at=1_700_000_100 + number,
    )
