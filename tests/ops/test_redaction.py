"""``paycore.ops.redaction``: what counts as a secret, and that reprs and error texts hide it.

The end-to-end check -- real ``paycore serve`` and ``paycore worker`` processes whose whole
output is searched for the configured secrets -- is tests/ops/test_ops_secrets.py.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from paycore.config import ChainConfig, Settings
from paycore.domain.records import WebhookConfig
from paycore.errors import InvalidInput, PaycoreError
from paycore.ops.redaction import MASK, RedactingFormatter, redact, remember_secrets, url_secrets
from paycore.webhooks.records import ClaimedDelivery

INFURA_KEY = "9aa3d95b3bc440fa88ea12eaa4456161"
ALCHEMY_KEY = "aLcH3mY-k3y_0123456789abcdef"
WEBHOOK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        (
            "postgresql://postgres:S3cretPw@db.internal:5432/pay",
            "postgresql://postgres:***@db.internal:5432/pay",
        ),
        (
            "storage postgresql+psycopg://app:p%40ss%2Fw@10.0.0.5/pay?sslmode=require.",
            "storage postgresql+psycopg://app:***@10.0.0.5/pay?sslmode=require.",
        ),
        ("redis://:R3disPass@cache:6379/0", "redis://:***@cache:6379/0"),
        (f"https://mainnet.infura.io/v3/{INFURA_KEY}", "https://mainnet.infura.io/v3/***"),
        (
            f"rpc (https://eth-mainnet.g.alchemy.com/v2/{ALCHEMY_KEY}) failed",
            "rpc (https://eth-mainnet.g.alchemy.com/v2/***) failed",
        ),
        (
            "https://api.example.com/prices?ids=eth&apikey=abc123&x_api-KEY=zz",
            "https://api.example.com/prices?ids=eth&apikey=***&x_api-KEY=***",
        ),
        ("https://node.example/rpc?access_token=t0k", "https://node.example/rpc?access_token=***"),
        (f"https://{INFURA_KEY}@rpc.example/", "https://***@rpc.example/"),
        (f"signed with {WEBHOOK_SECRET}", "signed with whsec_***"),
        (
            "host=db user=app password=hunter22 dbname=pay",
            "host=db user=app password=*** dbname=pay",
        ),
    ],
)
def test_secrets_in_urls_and_texts_are_masked(text: str, shown: str) -> None:
    assert redact(text) == shown
    assert redact(shown) == shown  # idempotent


@pytest.mark.parametrize(
    "text",
    [
        "http://127.0.0.1:8000/paycore/ (storage sqlite:///paycore.sqlite3)",
        "https://etherscan.io/address/0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
        "https://api.coingecko.com/api/v3/simple/price?ids=ethereum&vs_currencies=usd",
        "invalid request: token: unknown 1:0x0000000000000000000000000000000000000000",
        "postgresql://postgres@127.0.0.1:5432/test",
    ],
)
def test_texts_without_secrets_are_left_alone(text: str) -> None:
    assert redact(text) == text


def test_url_secrets_finds_each_secret_part_raw_and_decoded() -> None:
    assert url_secrets("postgresql://app:p%40ss@h/db") == {"p%40ss", "p@ss"}
    assert url_secrets(f"https://h/v3/{INFURA_KEY}?apikey=k3y&chain=1") == {INFURA_KEY, "k3y"}
    assert url_secrets("sqlite:///paycore.sqlite3") == set()
    assert url_secrets(None) == set()


def test_a_remembered_secret_is_masked_even_without_its_url() -> None:
    """requests quotes only the path: 'Max retries exceeded with url: /v3/<key>'."""
    key = "Zq8remembered0nlyK3y"
    remember_secrets([key, "short", None])
    assert (
        redact(f"Max retries exceeded with url: /rpc/{key}")
        == "Max retries exceeded with url: /rpc/***"
    )
    assert redact("a short word") == "a short word"  # under six characters: not replaced alone


SECRET_SETTINGS = Settings(
    database_url="postgresql://postgres:S3cretPw@127.0.0.1/pay",
    redis_url="redis://:R3disPass@127.0.0.1:6379/0",
    chains={
        1: ChainConfig(1, "ethereum", rpc_url=f"https://mainnet.infura.io/v3/{INFURA_KEY}"),
        728126428: ChainConfig(
            728126428, "tron", rpc_url="https://api.trongrid.io", api_key="tr0ngr1d-api-key"
        ),
    },
    smtp_password="smtp-Passw0rd",
    coingecko_api_key="CG-c01ngeck0key",
    coingecko_url="https://pro-api.example/?x_cg_pro_api_key=cgQueryKey9",
    chainlink_feeds={
        "1:0x0000000000000000000000000000000000000000": {
            "aggregator": "0x5f4eC3Df9cbd43714FE2740f5E3616155c5b8419",
            "rpc_url": f"https://eth-mainnet.g.alchemy.com/v2/{ALCHEMY_KEY}",
        }
    },
)
SECRETS = [
    "S3cretPw",
    "R3disPass",
    INFURA_KEY,
    "tr0ngr1d-api-key",
    "smtp-Passw0rd",
    "CG-c01ngeck0key",
    "cgQueryKey9",
    ALCHEMY_KEY,
]


def test_settings_repr_shows_no_secret() -> None:
    shown = repr(SECRET_SETTINGS) + str(SECRET_SETTINGS)
    assert "postgresql://postgres:***@127.0.0.1/pay" in shown
    assert "https://mainnet.infura.io/v3/***" in shown
    for secret in SECRETS:
        assert secret not in shown


def test_settings_list_every_secret_they_hold() -> None:
    assert set(SECRETS) <= SECRET_SETTINGS.secret_values()


def test_records_holding_webhook_secrets_do_not_show_them() -> None:
    config = WebhookConfig("0x" + "11" * 20, "https://merchant.example/h", WEBHOOK_SECRET)
    claimed = ClaimedDelivery(
        1, "msg_1", config.owner, "guid", "{}", 1, 0, "lease", 0, config.url, WEBHOOK_SECRET
    )
    for record in (config, claimed):
        assert WEBHOOK_SECRET not in repr(record)
        assert "whsec_" not in repr(record)
    assert config.to_wire()["secret"] == WEBHOOK_SECRET  # the owner's own answer keeps it


def test_error_texts_are_redacted() -> None:
    """A node error quotes the URL requests failed on; the 502 body must not carry its key."""
    error = PaycoreError(f"chain node: eth_call: 401 for url: https://h.example/v3/{INFURA_KEY}")
    assert error.text == "chain node: eth_call: 401 for url: https://h.example/v3/***"
    assert INFURA_KEY not in str(InvalidInput("url", f"https://u:{INFURA_KEY}@h/")).strip()


def test_the_log_formatter_redacts_messages_and_tracebacks() -> None:
    formatter = RedactingFormatter("%(levelname)s %(message)s")
    try:
        raise RuntimeError("could not connect to postgresql://app:TopS3cret99@db/pay")
    except RuntimeError as exc:
        record = logging.LogRecord(
            "paycore", logging.ERROR, __file__, 1, "at %s", (f"{WEBHOOK_SECRET}",), None
        )
        record.exc_info = (type(exc), exc, exc.__traceback__)
    line = formatter.format(record)
    assert "TopS3cret99" not in line and WEBHOOK_SECRET not in line
    assert "postgresql://app:***@db/pay" in line and f"at whsec_{MASK}" in line


@pytest.fixture
def forget_afterwards() -> Iterator[None]:
    """Known secrets are process-wide: put back what the process knew before the test."""
    from paycore.ops import redaction

    before = redaction._known
    yield
    redaction._known = before


def test_a_database_url_shows_all_but_its_password(forget_afterwards: None) -> None:
    """The newcomer's URL, whose user and database share the password's spelling: only the
    password is masked, in the URL and in the text around it only as a word of its own."""
    url = "postgresql://paycore:paycore@127.0.0.1:5432/paycore"
    remember_secrets(url_secrets(url))
    assert redact(url) == "postgresql://paycore:***@127.0.0.1:5432/paycore"
    assert redact(f"migrating {url}: password paycore refused; paycore_prod is fine") == (
        "migrating postgresql://paycore:***@127.0.0.1:5432/paycore: password *** refused; "
        "paycore_prod is fine"
    )


def test_a_known_key_in_a_url_without_a_password_is_still_masked(
    forget_afterwards: None,
) -> None:
    remember_secrets(["Zq81kd01x"])  # short, not key-like: only the known value finds it
    assert redact("https://rpc.example/v1/Zq81kd01x/eth?id=Zq81kd01x&chain=1") == (
        "https://rpc.example/v1/***/eth?id=***&chain=1"
    )
    assert redact("node said: bad key Zq81kd01x") == "node said: bad key ***"
