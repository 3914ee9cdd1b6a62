"""The webhook address guard against the answers a resolver can give, without a network.

The resolver is replaced by a fixed table (``socket.getaddrinfo`` is the one call netguard
makes), so each test states exactly what DNS said: a zone-scoped link-local address, the same
address twice, nothing, an error. What is checked is what a merchant or the delivery worker
sees: the addresses kept, and the words of each refusal.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

import pytest

from paycore.errors import InvalidInput
from paycore.webhooks.netguard import (
    RefusedTarget,
    Unresolvable,
    allowed_addresses,
    check_webhook_url,
    is_public,
    resolve,
    url_host_port,
)

Answer = list[tuple[Any, ...]]


def info(address: str) -> tuple[Any, ...]:
    if ":" in address:
        return (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, 443, 0, 0))
    return (socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, 443))


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> Callable[..., None]:
    """Install a resolver answering ``hook.example`` with ``addresses`` (or raising ``error``);
    any other name reaching it fails the test."""

    def install(*addresses: str, error: Exception | None = None) -> None:
        def getaddrinfo(host: str, port: object, *args: Any, **kwargs: Any) -> Answer:
            if host != "hook.example":
                raise AssertionError(f"{host!r} was sent to the resolver")
            if error is not None:
                raise error
            return [info(a) for a in addresses]

        monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

    install()
    return install


def test_an_ip_literal_is_never_sent_to_the_resolver(dns: Callable[..., None]) -> None:
    assert resolve("8.8.8.8", 443) == [ipaddress.ip_address("8.8.8.8")]
    assert resolve("2606:4700:4700::1111", 80) == [ipaddress.ip_address("2606:4700:4700::1111")]


def test_answers_lose_their_zone_and_their_duplicates(dns: Callable[..., None]) -> None:
    dns("fe80::1%eth0", "8.8.8.8", "fe80::1%eth1", "8.8.8.8")
    assert resolve("hook.example", 443) == [
        ipaddress.ip_address("fe80::1"),
        ipaddress.ip_address("8.8.8.8"),
    ]


def test_a_name_with_any_inside_address_is_refused_naming_them_all(
    dns: Callable[..., None],
) -> None:
    dns("8.8.8.8", "10.0.0.1", "fe80::1%eth0")
    with pytest.raises(RefusedTarget) as err:
        allowed_addresses("hook.example", 443, allow_private=False)
    assert str(err.value) == (
        "hook.example resolves to a private, loopback or link-local address "
        "(10.0.0.1: private; fe80::1: link-local)"
    )
    assert [str(ip) for ip in allowed_addresses("hook.example", 443, allow_private=True)] == [
        "8.8.8.8",
        "10.0.0.1",
        "fe80::1",
    ]


def test_a_name_with_only_public_addresses_is_allowed(dns: Callable[..., None]) -> None:
    dns("8.8.8.8", "2606:4700:4700::1111")
    found = allowed_addresses("hook.example", 443, allow_private=False)
    assert [str(ip) for ip in found] == ["8.8.8.8", "2606:4700:4700::1111"]
    check_webhook_url("https://hook.example/cb", allow_private=False)


def test_no_answer_and_a_resolver_error_are_both_unresolvable(dns: Callable[..., None]) -> None:
    with pytest.raises(Unresolvable) as err:
        resolve("hook.example", 443)
    assert str(err.value) == "cannot resolve hook.example: no addresses"
    dns(error=socket.gaierror(socket.EAI_NONAME, "Name or service not known"))
    with pytest.raises(Unresolvable) as err:
        resolve("hook.example", 443)
    assert str(err.value) == f"cannot resolve hook.example: [Errno {socket.EAI_NONAME}] " + (
        "Name or service not known"
    )
    # Not set up yet is not refused when the URL is set: every delivery checks again.
    check_webhook_url("https://hook.example/cb", allow_private=False)


def test_a_teredo_address_carrying_loopback_is_not_public() -> None:
    # 2001::/32 with the client 127.0.0.1 stored inverted in the last 32 bits.
    assert not is_public(ipaddress.ip_address("2001:0:4136:e378:8000:63bf:80ff:fffe"))


@pytest.mark.parametrize(
    ("url", "host_port"),
    [
        ("https://hook.example/cb", ("hook.example", 443)),
        ("HTTPS://hook.example/cb", ("hook.example", 443)),
        ("http://hook.example/cb", ("hook.example", 80)),
        ("https://hook.example:8443/cb", ("hook.example", 8443)),
        ("http://[::1]:81/cb", ("::1", 81)),
    ],
)
def test_the_port_defaults_by_scheme(url: str, host_port: tuple[str, int]) -> None:
    assert url_host_port(url) == host_port


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http:///cb", "invalid URL: no host"),
        ("https://hook.example:99999/cb", "invalid URL: Port out of range 0-65535"),
        (
            "http://10.0.0.1/cb",
            "10.0.0.1 resolves to a private, loopback or link-local address (10.0.0.1: private)",
        ),
    ],
)
def test_a_refused_url_names_the_field_and_the_reason(
    dns: Callable[..., None], url: str, reason: str
) -> None:
    with pytest.raises(InvalidInput) as err:
        check_webhook_url(url, allow_private=False)
    assert err.value.text == f"invalid request: url: {reason}"
    with pytest.raises(InvalidInput) as err:
        check_webhook_url(url, allow_private=False, field="newCallbackUrl")
    assert err.value.field == "newCallbackUrl"
