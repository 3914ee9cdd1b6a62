"""``paycore.management.service`` and ``paycore.management.staking`` without HTTP: whom a signer
acts for, the e-mail address rule, and the deep link format."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from mgmt_helpers import account, salted

from paycore import Gateway, Settings
from paycore.errors import Forbidden, InvalidInput, NotFound
from paycore.management.records import AppKey
from paycore.management.service import enable_email, validate_email
from paycore.management.staking import wallet_deep_link
from paycore.storage.memory import MemoryStorage

NOW = 1_700_000_000


class Clock:
    def __init__(self) -> None:
        self.now = float(NOW)

    def __call__(self) -> float:
        self.now += 1  # every call a new second: equal bodies never sign alike
        return self.now


@pytest.fixture
def gateway() -> Gateway:
    clock = Clock()
    return Gateway(
        Settings(database_url="memory://"),
        storage=MemoryStorage(clock=clock),
        entry_points=False,
        clock=clock,
    )


def _body(gateway: Gateway, signer: Any, **fields: Any) -> dict[str, Any]:
    return salted(signer, {"chainId": 1, **fields}, gateway.now())


def test_an_app_key_acts_for_its_owner_unless_the_body_says_otherwise(gateway: Gateway) -> None:
    owner, other, key = account("owner"), account("other"), account("key")
    with gateway.storage.transaction() as tx:
        tx.allocate_wallet_index(owner.address, 1)  # paycore knows the owner
        tx.add_app_key(AppKey(key.address, owner.address, NOW, owner.address), 10)

    actor = _authenticate(gateway, _body(gateway, key))
    assert (actor.owner, actor.is_owner) == (owner.address, False)
    with gateway.storage.transaction() as tx:
        tx.allocate_wallet_index(key.address, 1)  # now the key's own address is an owner too
    # Whom it acts for is then ambiguous: the body must say.
    with pytest.raises(InvalidInput, match="ownerAddress: required: the signer .* is an owner"):
        _authenticate(gateway, _body(gateway, key))
    actor = _authenticate(gateway, _body(gateway, key, ownerAddress=owner.address))
    assert (actor.owner, actor.is_owner) == (owner.address, False)
    # Naming itself, the key's address acts as the owner it also is.
    actor = _authenticate(gateway, _body(gateway, key, ownerAddress=key.address))
    assert (actor.owner, actor.is_owner) == (key.address, True)
    actor = _authenticate(gateway, _body(gateway, owner))
    assert (actor.owner, actor.is_owner) == (owner.address, True)
    with pytest.raises(Forbidden, match="is neither"):
        _authenticate(gateway, _body(gateway, key, ownerAddress=other.address))
    with pytest.raises(Forbidden, match="neither an owner known to paycore"):
        _authenticate(gateway, _body(gateway, other))


@pytest.mark.parametrize(
    "email", ["a@example.com", "first.last+tag@sub.example.co.uk", "  padded@example.com  "]
)
def test_plain_addresses_pass(email: str) -> None:
    assert validate_email(email) == email.strip()


@pytest.mark.parametrize(
    "email", ["@example.com", "a@", "a@-x.com", "a@x-.com", "a@x.c_m", "a b@example.com"]
)
def test_odd_addresses_do_not(email: str) -> None:
    with pytest.raises(InvalidInput):
        validate_email(email)


def test_enable_email_needs_a_stored_address(gateway: Gateway) -> None:
    with pytest.raises(NotFound, match="has set no e-mail address on chain 1"):
        enable_email(gateway, account("owner").address, 1)
    with pytest.raises(InvalidInput):
        enable_email(gateway, "nobody", None)


def test_the_deep_link_carries_to_chain_value_and_data() -> None:
    tx = {
        "to": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
        "chainId": 1,
        "value": "0xde0b6b3a7640000",
        "data": "0xa694fc3a00",
    }
    link = wallet_deep_link(tx)
    assert link == (
        "https://metamask.app.link/send/0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed@1"
        "?value=1000000000000000000&data=0xa694fc3a00"
    )
    parts = urlsplit(link)
    assert parse_qs(parts.query) == {"value": ["1000000000000000000"], "data": ["0xa694fc3a00"]}


def _authenticate(gateway: Gateway, body: dict[str, Any]) -> Any:
    return gateway.management.authenticate(body.get("ownerAddress"), body, 1)
