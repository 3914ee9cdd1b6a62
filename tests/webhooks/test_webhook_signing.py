"""The pure parts of delivery: Standard Webhooks signatures as a receiver library checks
them, the retry schedule and its give-up horizon, and which addresses count as public."""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import time

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from paycore.config import Settings
from paycore.errors import InvalidInput
from paycore.webhooks.config import new_secret
from paycore.webhooks.delivery import Outcome, retry_delay, settle, sign, signed_headers
from paycore.webhooks.netguard import check_webhook_url, is_public
from paycore.webhooks.records import ClaimedDelivery, DeliveryStatus

BODY = '{"guid":"g","status":"paid","note":"caf\u00e9 \u2713"}'


def test_signature_verifies_with_the_standardwebhooks_library() -> None:
    secret = new_secret()
    headers = signed_headers(secret, "msg_1", int(time.time()), BODY)
    assert Webhook(secret).verify(BODY.encode(), headers) == {
        "guid": "g",
        "status": "paid",
        "note": "caf\u00e9 \u2713",
    }


def test_signature_is_hmac_sha256_of_id_timestamp_body_with_the_decoded_secret() -> None:
    key = bytes(range(24))
    secret = "whsec_" + base64.b64encode(key).decode()
    expected = hmac.new(key, f"msg_7.1700000000.{BODY}".encode(), hashlib.sha256).digest()
    assert sign(secret, "msg_7", 1700000000, BODY) == "v1," + base64.b64encode(expected).decode()


@pytest.mark.parametrize("tamper", ["body", "id", "timestamp", "secret"])
def test_any_change_breaks_the_signature(tamper: str) -> None:
    secret, now = new_secret(), int(time.time())
    headers = signed_headers(secret, "msg_1", now, BODY)
    body = BODY
    if tamper == "body":
        body = BODY.replace("paid", "expired")
    elif tamper == "id":
        headers["webhook-id"] = "msg_2"
    elif tamper == "timestamp":
        headers["webhook-timestamp"] = str(now - 1)
    else:
        secret = new_secret()
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body.encode(), headers)


def test_headers_carry_the_standard_names_and_json_content_type() -> None:
    headers = signed_headers(new_secret(), "msg_1", 1700000000, BODY)
    assert headers["webhook-id"] == "msg_1"
    assert headers["webhook-timestamp"] == "1700000000"
    assert headers["webhook-signature"].startswith("v1,")
    assert headers["content-type"] == "application/json"


# -- the retry schedule -------------------------------------------------------------------


def test_default_schedule_is_designs_then_every_two_hours() -> None:
    settings = Settings(webhook_retry_jitter=0)
    delays = [retry_delay(n, settings) for n in range(1, 10)]
    assert delays == [5, 30, 120, 600, 1800, 3600, 7200, 7200, 7200]


@pytest.mark.parametrize("draw", [0.0, 0.5, 0.999])
def test_jitter_stays_within_its_band(draw: float) -> None:
    settings = Settings(webhook_retry_jitter=0.2)
    delay = retry_delay(2, settings, rng=lambda: draw)
    assert 24 <= delay <= 36


def _claimed(attempts: int, retry_from: int = 0) -> ClaimedDelivery:
    return ClaimedDelivery(1, "msg_1", "o", "g", "{}", attempts, retry_from, "t", 0, "u", "s")


def test_a_2xx_settles_as_delivered() -> None:
    settlement = settle(_claimed(1), Outcome(204, None, 3), 0, Settings())
    assert settlement.status is DeliveryStatus.DELIVERED


def test_failures_retry_until_24_hours_then_fail() -> None:
    """Walk the default schedule without jitter: the last retry lands before 24 h after
    queueing, and the one after it would not, so the delivery fails there."""
    settings = Settings(webhook_retry_jitter=0)
    failed = Outcome(500, "answered 500", 3)
    now, attempts = 0, 0
    while True:
        attempts += 1
        settlement = settle(_claimed(attempts), failed, now, settings)
        if settlement.status is DeliveryStatus.FAILED:
            break
        assert settlement.status is DeliveryStatus.PENDING and settlement.next_at is not None
        now = settlement.next_at
    assert now <= 86_400_000 < now + 7_200_000
    # The first try, six scheduled retries (done by 1 h 43 min), eleven 2-hourly ones.
    assert attempts == 1 + 6 + 11


def test_settings_parse_the_schedule_and_flag_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "PAYCORE_WEBHOOK_RETRY_SCHEDULE": "0.5, 1,2",
            "PAYCORE_WEBHOOK_ALLOW_PRIVATE": "0",
            "PAYCORE_WEBHOOK_TIMEOUT": "3",
            "PAYCORE_WORKER_POLL_INTERVAL": "0.25",
        }
    )
    assert settings.webhook_retry_schedule == (0.5, 1.0, 2.0)
    assert settings.webhook_allow_private is False
    assert (settings.webhook_timeout, settings.worker_poll_interval) == (3.0, 0.25)
    assert Settings.from_env({"PAYCORE_WEBHOOK_ALLOW_PRIVATE": "true"}).webhook_allow_private


def test_defaults_are_designs() -> None:
    settings = Settings()
    assert settings.webhook_timeout == 10
    assert settings.webhook_allow_private is False
    assert settings.webhook_retry_schedule == (5, 30, 120, 600, 1800, 3600)
    assert (settings.webhook_retry_every, settings.webhook_retry_horizon) == (7200, 86400)


def test_a_lease_shorter_than_the_timeout_is_refused() -> None:
    with pytest.raises(InvalidInput, match="webhook_lease"):
        Settings(webhook_timeout=10, webhook_lease=10)


# -- where webhooks may go -------------------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.10",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "fe80::1",
        "fc00::1",
        "::ffff:127.0.0.1",
        "2002:7f00:1::1",
    ],
)
def test_inside_addresses_are_not_public(address: str) -> None:
    assert not is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"])
def test_internet_addresses_are_public(address: str) -> None:
    assert is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/hook",
        "http://localhost/hook",
        "https://10.0.0.5/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://[::ffff:10.0.0.1]/hook",
    ],
)
def test_private_urls_are_refused_when_set(url: str) -> None:
    with pytest.raises(InvalidInput, match="private, loopback or link-local"):
        check_webhook_url(url, allow_private=False)
    check_webhook_url(url, allow_private=True)


def test_public_and_not_yet_resolvable_urls_are_accepted_when_set() -> None:
    check_webhook_url("https://8.8.8.8/hook", allow_private=False)
    # DNS may not be set up yet; every delivery resolves and checks again.
    check_webhook_url("https://merchant.example.test/hook", allow_private=False)
