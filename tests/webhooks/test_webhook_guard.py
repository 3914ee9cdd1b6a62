"""The address guard: every way of spelling an inside address is refused, and a delivery to
a refused (or malformed) URL fails at once, the reason in its log, instead of being retried
for 24 hours. Transient failures (nothing listening, a name that does not resolve) are still
retried."""

from __future__ import annotations

import ipaddress
import socket

import pytest
from events_helpers import OTHER_OWNER, Merchant, Receiver, fast_settings, gateway_on

from paycore.domain.records import WebhookConfig
from paycore.errors import InvalidInput
from paycore.storage import Storage
from paycore.webhooks.delivery import post
from paycore.webhooks.dispatcher import Dispatcher
from paycore.webhooks.log import list_deliveries
from paycore.webhooks.netguard import (
    V6_REFUSED,
    check_webhook_url,
    is_public,
    literal_address,
    refusal,
    resolve,
)
from paycore.webhooks.records import Delivery, DeliveryStatus

#: (address, the reason the guard must give), every range the guard promises to refuse.
REFUSED = [
    # IPv4
    ("0.0.0.0", "'this network'"),
    ("0.1.2.3", "'this network'"),
    ("10.0.0.1", "private"),
    ("10.255.255.255", "private"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("100.127.255.254", "carrier-grade NAT"),
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("168.63.129.16", "Azure wire server (cloud-internal)"),
    ("169.254.169.254", "link-local"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.0.0.8", "IETF protocol assignment"),
    ("192.0.2.1", "documentation"),
    ("192.168.1.1", "private"),
    ("198.18.0.1", "benchmarking"),
    ("198.19.255.255", "benchmarking"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "broadcast"),
    # IPv6 of its own
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("fec0::1", "site-local"),
    ("fc00::1", "unique-local"),
    ("fd12:3456:789a::1", "unique-local"),
    ("ff02::1", "multicast"),
    ("ff05::1:3", "multicast"),
    ("100::1", "discard-only"),
    ("2001:db8::1", "documentation"),
    # IPv6 forms that reach an IPv4 host
    ("::ffff:127.0.0.1", "IPv4-mapped form of 127.0.0.1, loopback"),
    ("::ffff:10.0.0.1", "IPv4-mapped form of 10.0.0.1, private"),
    ("::ffff:169.254.169.254", "IPv4-mapped form of 169.254.169.254, link-local"),
    ("::ffff:0:192.168.0.1", "IPv4-translated form of 192.168.0.1, private"),
    ("::127.0.0.1", "IPv4-compatible (deprecated)"),
    ("::a00:1", "IPv4-compatible (deprecated)"),
    ("64:ff9b::7f00:1", "NAT64 form of 127.0.0.1, loopback"),
    ("64:ff9b::10.1.2.3", "NAT64 form of 10.1.2.3, private"),
    ("64:ff9b::a9fe:a9fe", "NAT64 form of 169.254.169.254, link-local"),
    ("64:ff9b:1::7f00:1", "local-use NAT64"),
    ("64:ff9b:1::808:808", "local-use NAT64"),  # local use: no telling where it leads
    ("2002:7f00:1::1", "6to4 form of 127.0.0.1, loopback"),
    ("2002:a00:1::", "6to4 form of 10.0.0.1, private"),
    ("2002:c0a8:101::1", "6to4 form of 192.168.1.1, private"),
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"),
    ("2001::1", "Teredo"),
]

#: Host spellings an HTTP client reads as an IPv4 address (inet_aton): (host, address).
NUMERIC_HOSTS = [
    ("2130706433", "127.0.0.1"),
    ("0x7f.1", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("017700000001", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("0", "0.0.0.0"),
    ("10.1", "10.0.0.1"),
    ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
    ("3232235777", "192.168.1.1"),
    ("0xc0a80101", "192.168.1.1"),
]

PUBLIC = [
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700:4700::1111",
    "::ffff:8.8.8.8",
    "64:ff9b::8.8.8.8",
    "2002:808:808::1",
]


def _url(address: str, port: int = 80) -> str:
    host = f"[{address}]" if ":" in address else address
    return f"http://{host}:{port}/hook"


@pytest.mark.parametrize(("address", "reason"), REFUSED)
def test_every_inside_address_is_refused_with_its_reason(address: str, reason: str) -> None:
    assert refusal(ipaddress.ip_address(address)) == reason
    assert not is_public(ipaddress.ip_address(address))


@pytest.mark.parametrize(("address", "reason"), [r for r in REFUSED if "%" not in r[0]])
def test_every_inside_address_is_refused_when_set_and_when_delivering(
    address: str, reason: str
) -> None:
    url = _url(address)
    with pytest.raises(InvalidInput, match="resolves to a private, loopback or link-local"):
        check_webhook_url(url, allow_private=False)
    outcome = post(url, b"{}", {}, timeout=1.0, allow_private=False)
    assert outcome.permanent and outcome.status_code is None
    assert outcome.error is not None and reason in outcome.error


def test_azure_wire_server_is_refused_though_its_address_is_public() -> None:
    """168.63.129.16 is in a public range (``is_global``) yet answers only inside Azure, where
    it serves the VM agent and the host's metadata: the guard names it, and a POST to it is
    refused before any connection is made."""
    wire_server = ipaddress.ip_address("168.63.129.16")
    assert wire_server.is_global  # so only the guard's own table catches it
    assert refusal(wire_server) == "Azure wire server (cloud-internal)"
    for host in ("168.63.129.16", "[::ffff:168.63.129.16]", "2822734096"):  # 2822734096 = it
        url = f"http://{host}/machine?comp=goalstate"
        with pytest.raises(InvalidInput, match="Azure wire server"):
            check_webhook_url(url, allow_private=False)
        outcome = post(url, b"{}", {}, timeout=1.0, allow_private=False)
        assert outcome.permanent and outcome.status_code is None and outcome.latency_ms < 1000
        assert outcome.error is not None and "Azure wire server" in outcome.error
    assert refusal(ipaddress.ip_address("168.63.129.17")) is None  # one address, not a range


@pytest.mark.parametrize("address", ["2001:2::1", "2001:10::1", "2001:20::1"])
def test_what_no_table_names_is_refused_as_not_globally_routable(address: str) -> None:
    """The last refusal, beyond the tables: 2001:2::/48 (benchmarking), 2001:10::/28 (ORCHID)
    and 2001:20::/28 (ORCHIDv2) sit in no range of ``V6_REFUSED`` (2001::/32 is Teredo only),
    and ``ipaddress`` knows them as special: refused, at set time and at delivery."""
    ip = ipaddress.ip_address(address)
    assert not any(ip in network for network, _why in V6_REFUSED)
    assert refusal(ip) == "not globally routable"
    url = _url(address)
    with pytest.raises(InvalidInput, match=f"{address}: not globally routable"):
        check_webhook_url(url, allow_private=False)
    outcome = post(url, b"{}", {}, timeout=1.0, allow_private=False)
    assert outcome.permanent and outcome.status_code is None
    assert outcome.error is not None and outcome.error.endswith(
        f"({address}: not globally routable); not retried"
    )


@pytest.mark.parametrize(("host", "address"), NUMERIC_HOSTS)
def test_numeric_ipv4_spellings_are_read_as_the_client_reads_them(host: str, address: str) -> None:
    """The guard resolves ``host`` to the address the HTTP client would connect to (the C
    library's reading), and refuses it."""
    client_reads = {info[4][0] for info in socket.getaddrinfo(host, 80, type=socket.SOCK_STREAM)}
    assert client_reads == {address}
    assert literal_address(host) == ipaddress.ip_address(address)
    assert resolve(host, 80) == [ipaddress.ip_address(address)]
    with pytest.raises(InvalidInput, match=f"resolves to a private.*{address}"):
        check_webhook_url(f"http://{host}/hook", allow_private=False)
    assert post(f"http://{host}/hook", b"{}", {}, timeout=1.0, allow_private=False).permanent


@pytest.mark.parametrize("address", PUBLIC)
def test_public_addresses_and_their_ipv6_forms_pass(address: str) -> None:
    assert refusal(ipaddress.ip_address(address)) is None
    check_webhook_url(_url(address), allow_private=False)


def test_a_name_that_is_not_a_number_is_left_to_dns() -> None:
    assert literal_address("merchant.example.test") is None
    assert literal_address("deadbeef") is None  # hex needs its 0x to be a number


@pytest.mark.parametrize("host", ["127.1 x", "127.0.0.1 ::1", "8.8.8.8\t", "10.1 evil.test"])
def test_a_number_followed_by_whitespace_is_not_read_as_that_number(host: str) -> None:
    """``inet_aton`` stops at whitespace and ignores what follows, so it reads ``127.1 x`` as
    127.0.0.1; ``getaddrinfo``, which the HTTP client asks, reads no such host as a number
    (glibc checks the whole text). The guard reads it as the client does: a name, left to
    the resolver, never an address the client would not have dialled."""
    assert literal_address(host) is None


@pytest.mark.parametrize(
    "address",
    [a for a, _ in REFUSED if ":" in a and "%" not in a] + [a for a in PUBLIC if ":" in a],
)
def test_a_zone_changes_no_verdict(address: str) -> None:
    """``fe80::1%eth0``: the zone names an interface, not another address; every check reads
    the address's integer, so a zoned address is judged as the address alone."""
    plain = ipaddress.IPv6Address(address)
    zoned = ipaddress.IPv6Address(f"{address}%eth0")
    assert zoned.scope_id == "eth0"
    assert refusal(zoned) == refusal(plain)


# -- what a refusal does to a delivery --------------------------------------------------------


def _deliveries(store: Storage, owner: str) -> list[Delivery]:
    with store.transaction() as tx:
        items, _total = tx.list_deliveries(owner, status=None, offset=0, limit=50)
    return items


@pytest.mark.parametrize(
    ("host", "reason"),
    [
        (
            "0x7f.1",
            "0x7f.1 resolves to a private, loopback or link-local address (127.0.0.1: loopback)",
        ),
        (
            "[64:ff9b::7f00:1]",
            "64:ff9b::7f00:1 resolves to a private, loopback or link-local "
            "address (64:ff9b::7f00:1: NAT64 form of 127.0.0.1, loopback)",
        ),
        (
            "[::ffff:127.0.0.1]",
            "::ffff:127.0.0.1 resolves to a private, loopback or link-local "
            "address (::ffff:7f00:1: IPv4-mapped form of 127.0.0.1, loopback)",
        ),
    ],
)
def test_a_refused_target_fails_at_once_with_the_reason_in_the_log(
    store: Storage, receiver: Receiver, host: str, reason: str
) -> None:
    """The URL points at the live receiver, so a guard that let it through would deliver;
    instead the one attempt is logged with its reason and the delivery fails for good."""
    gateway = gateway_on(store, fast_settings(webhook_allow_private=False))
    merchant = Merchant(gateway, OTHER_OWNER)
    with store.transaction() as tx:  # as if set while allowed, or before the guard knew
        tx.put_webhook(WebhookConfig(OTHER_OWNER, f"http://{host}:{receiver.port}/h", "whsec_AA"))
    merchant.invoices_paid_in_parts(1, parts=1)
    dispatcher = Dispatcher(gateway.storage, gateway.settings)
    assert dispatcher.run_once() == 1
    [delivery] = _deliveries(store, OTHER_OWNER)
    assert delivery.status is DeliveryStatus.FAILED and delivery.next_attempt_at is None
    [attempt] = delivery.log
    assert (attempt.status_code, attempt.error) == (None, f"refused: {reason}; not retried")
    assert delivery.to_wire()["attempts"][0]["error"] == f"refused: {reason}; not retried"
    assert dispatcher.run_once() == 0  # nothing left to retry
    assert receiver.snapshot() == []
    items, total, _, _ = list_deliveries(gateway, OTHER_OWNER, status="failed")
    assert total == 1 and items[0].id == delivery.id


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("http://127.0.0.1:99999/h", "refused: invalid URL: Port out of range 0-65535"),
        ("http:///h", "refused: invalid URL: no host"),
        ("ftp://127.0.0.1/h", "refused: invalid URL: not http or https"),
    ],
)
def test_an_invalid_url_fails_at_once_even_when_private_targets_are_allowed(
    store: Storage, url: str, error: str
) -> None:
    gateway = gateway_on(store)  # fast_settings allow private targets
    with store.transaction() as tx:
        tx.put_webhook(WebhookConfig(OTHER_OWNER, url, "whsec_AA"))
    Merchant(gateway, OTHER_OWNER).invoices_paid_in_parts(1, parts=1)
    Dispatcher(gateway.storage, gateway.settings).run_once()
    [delivery] = _deliveries(store, OTHER_OWNER)
    assert delivery.status is DeliveryStatus.FAILED
    assert [a.error for a in delivery.log] == [f"{error}; not retried"]


@pytest.mark.parametrize(
    ("url", "error"),
    [
        ("http://127.0.0.1:9/closed", "connection refused by 127.0.0.1:9"),
        ("http://hook.example.invalid/h", "cannot resolve hook.example.invalid"),
    ],
)
def test_transient_failures_are_still_retried(store: Storage, url: str, error: str) -> None:
    """Nothing listening (the discard port) and a name without an address may both be fine
    in a minute: those keep the retry schedule."""
    gateway = gateway_on(store)
    with store.transaction() as tx:
        tx.put_webhook(WebhookConfig(OTHER_OWNER, url, "whsec_AA"))
    Merchant(gateway, OTHER_OWNER).invoices_paid_in_parts(1, parts=1)
    Dispatcher(gateway.storage, gateway.settings).run_once()
    [delivery] = _deliveries(store, OTHER_OWNER)
    assert delivery.status is DeliveryStatus.PENDING and delivery.next_attempt_at is not None
    [attempt] = delivery.log
    assert attempt.error is not None and attempt.error.startswith(error)
