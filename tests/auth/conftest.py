"""Fixtures for the auth tests: an in-memory store, settings, and a few named wallets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from auth_helpers import NOW, SessionClient, account, registration_body
from eth_account.signers.local import LocalAccount

from paycore.api.wire import read
from paycore.auth import register_pubkey
from paycore.auth.registry import Registration
from paycore.config import Settings
from paycore.domain.records import SessionKey
from paycore.storage.memory import MemoryStorage


@pytest.fixture
def now() -> int:
    return NOW


@pytest.fixture
def storage() -> Iterator[MemoryStorage]:
    store = MemoryStorage(clock=lambda: NOW)
    yield store
    store.close()


@pytest.fixture
def settings() -> Settings:
    return Settings(auth_mode="strict", session_key_cap=3, session_key_ttl=3600)


@pytest.fixture
def owner() -> LocalAccount:
    return account("owner")


@pytest.fixture
def client() -> SessionClient:
    return SessionClient(account("session-1"))


@pytest.fixture
def registered(
    storage: MemoryStorage, settings: Settings, owner: LocalAccount, client: SessionClient
) -> SessionKey:
    """``client``'s key, registered for ``owner`` at NOW."""
    return register_pubkey(
        storage, settings, read(Registration, registration_body(owner, client.key)), now=NOW
    )
