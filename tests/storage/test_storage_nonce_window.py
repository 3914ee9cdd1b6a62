"""The nonce window on the SQL store only: which used nonces it keeps, and keys written before
the window existed. The window's contract on every backend is part of the shipped suite
(``paycore.testing.storage_contract.nonces``)."""

from __future__ import annotations

import attrs
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.engine import URL

from paycore.testing.storage_contract.nonces import KEY, WINDOW, accept, digest
from paycore_storage import SqlStorage, migrate
from paycore_storage.engine import make_engine
from paycore_storage.tables import session_nonces

# -- SQL only: what is kept, and keys older than the window --------------------------------

BOTH = pytest.mark.parametrize(
    "sql_url",
    ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
    indirect=True,
)


def stored_nonces(store: SqlStorage) -> list[int]:
    with store.engine.connect() as connection:
        query = select(session_nonces.c.nonce).order_by(session_nonces.c.nonce)
        return list(connection.execute(query).scalars())


@BOTH
def test_rows_outside_the_window_are_deleted(sql_url: URL) -> None:
    store = SqlStorage(sql_url)
    try:
        with store.transaction() as tx:
            tx.put_session_key(KEY)
        for nonce in (100, 600, 1099):
            assert accept(store, nonce) is True
        assert stored_nonces(store) == [100, 600, 1099]
        assert accept(store, 1100) is True  # 100 <= 1100 - 1000: forgotten
        assert stored_nonces(store) == [600, 1099, 1100]
        assert accept(store, 3000) is True
        assert stored_nonces(store) == [3000]
        with store.engine.connect() as connection:
            count = select(func.count()).select_from(session_nonces)
            assert connection.execute(count).scalar_one() == 1
    finally:
        store.close()


@BOTH
def test_keys_from_before_the_upgrade_keep_their_used_nonces_refused(sql_url: URL) -> None:
    """Before 0007 nothing recorded which nonces a key used, only the highest; the upgrade
    makes that highest a floor, so no old request becomes acceptable in the window."""
    migrate(sql_url, "0005")
    engine = make_engine(sql_url)
    try:
        with engine.begin() as connection:
            connection.execute(
                text(
                    "INSERT INTO paycore_session_keys (address, public_key, owner, "
                    "registered_at, expires_at, last_seen_nonce, encryption_public_key) "
                    "VALUES (:address, :public_key, :owner, :registered_at, :expires_at, "
                    ":last_seen_nonce, NULL)"
                ),
                {**attrs.asdict(KEY), "last_seen_nonce": 5000},
            )
    finally:
        engine.dispose()
    store = SqlStorage(sql_url)  # migrates to head on first use
    try:
        assert [accept(store, n) for n in (4999, 4500, 5000)] == [False, False, False]
        assert accept(store, 5001) is True
        # a key registered after the upgrade has no floor
        newer = attrs.evolve(KEY, address="0x8888888888888888888888888888888888888888")
        with store.transaction() as tx:
            tx.put_session_key(newer)
            assert tx.accept_nonce(newer.address, 1, digest(""), window=WINDOW) is True
            old = tx.get_session_key(KEY.address)
        assert old == attrs.evolve(KEY, last_seen_nonce=5001, encryption_public_key=None)
    finally:
        store.close()
