"""Where a webhook may point: public addresses only, unless the operator allows others.

A webhook URL is chosen by a merchant, but the POST comes from inside the operator's
network, so without this check anyone with a wallet could make the gateway call its
database, a cloud metadata service (169.254.169.254, or Azure's wire server at the public
address 168.63.129.16, which every Azure VM reaches) or an admin port on localhost (SSRF).
The check runs twice: when the URL is set, to tell the merchant early, and before every
delivery, because a name that resolved to a public address yesterday can resolve to
127.0.0.1 today. The delivery then connects to the very address that was checked, never
resolving again in between, so a DNS answer cannot change under the check (rebinding).

Which addresses are refused is spelled out below rather than left to ``ipaddress``'s
``is_global``, whose answers differ between Python versions (3.11 calls ``::7f00:1``,
``fec0::1`` and ``64:ff9b::7f00:1`` global). IPv6 forms that carry an IPv4 address to its
host -- IPv4-mapped, NAT64 (RFC 6052), SIIT-translated and 6to4 -- are judged by that IPv4
address; forms that are deprecated or local by definition (IPv4-compatible, local-use NAT64,
Teredo) are refused outright. Host names are resolved exactly as the HTTP client would
resolve them, which includes the decimal, octal, hex and short IPv4 spellings
(``2130706433``, ``0x7f.1``, ``127.1``) that ``getaddrinfo`` accepts.

A refusal is permanent (:class:`RefusedTarget`): retrying the same URL cannot help, so the
delivery fails at once. A name that does not resolve (:class:`Unresolvable`) may resolve
later and is retried.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from ..errors import InvalidInput

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network

#: IPv4 ranges a webhook may never reach, with the reason a refusal names.
V4_REFUSED: tuple[tuple[ipaddress.IPv4Network, str], ...] = (
    (_V4("0.0.0.0/8"), "'this network'"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("100.64.0.0/10"), "carrier-grade NAT"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("168.63.129.16/32"), "Azure wire server (cloud-internal)"),
    (_V4("169.254.0.0/16"), "link-local"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.0.0.0/24"), "IETF protocol assignment"),
    (_V4("192.0.2.0/24"), "documentation"),
    (_V4("192.88.99.0/24"), "6to4 relay anycast"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("198.18.0.0/15"), "benchmarking"),
    (_V4("198.51.100.0/24"), "documentation"),
    (_V4("203.0.113.0/24"), "documentation"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("255.255.255.255/32"), "broadcast"),
    (_V4("240.0.0.0/4"), "reserved"),
)

#: IPv6 ranges refused whatever follows, most specific first.
V6_REFUSED: tuple[tuple[ipaddress.IPv6Network, str], ...] = (
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("::/96"), "IPv4-compatible (deprecated)"),
    (_V6("64:ff9b:1::/48"), "local-use NAT64"),
    (_V6("100::/64"), "discard-only"),
    (_V6("2001::/32"), "Teredo"),
    (_V6("2001:db8::/32"), "documentation"),
    (_V6("fc00::/7"), "unique-local"),
    (_V6("fe80::/10"), "link-local"),
    (_V6("fec0::/10"), "site-local"),
    (_V6("ff00::/8"), "multicast"),
)

_MAPPED = _V6("::ffff:0:0/96")
_TRANSLATED = _V6("::ffff:0:0:0/96")  # SIIT, RFC 2765
_NAT64 = _V6("64:ff9b::/96")  # the well-known prefix, RFC 6052


class TargetError(Exception):
    """A webhook URL that cannot be delivered to right now."""


class RefusedTarget(TargetError):
    """Permanent: the URL is malformed, or its host is (or resolves to) an address webhooks
    may not reach. Retrying cannot help."""


class Unresolvable(TargetError):
    """Transient: the host has no address right now (DNS may catch up)."""


def _embedded_v4(ip: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, str] | None:
    """The IPv4 address an IPv6 one reaches, with the form's name, if it is such a form."""
    low32 = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip in _MAPPED:
        return low32, "IPv4-mapped"
    if ip in _TRANSLATED:
        return low32, "IPv4-translated"
    if ip in _NAT64:
        return low32, "NAT64"
    six_to_four = ip.sixtofour  # set exactly for 2002::/16, the 6to4 prefix (RFC 3056)
    if six_to_four is not None:
        return six_to_four, "6to4"
    return None


def refusal(ip: IPAddress) -> str | None:
    """Why a webhook may not connect to ``ip`` (a short phrase), or None if it may."""
    # A zone ("fe80::1%eth0") needs no stripping: every test below reads the address's
    # integer (network membership, the embedded IPv4, is_global), which a zone leaves alone.
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = _embedded_v4(ip)
        if embedded is not None:
            inner, form = embedded
            why = refusal(inner)
            return None if why is None else f"{form} form of {inner}, {why}"
    table: Iterable[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, str]] = (
        V6_REFUSED if ip.version == 6 else V4_REFUSED
    )
    for network, why in table:
        if ip in network:
            return why
    # Belt and braces: whatever this Python's registry knows to be special, beyond the above.
    if not ip.is_global:
        return "not globally routable"
    return None


def is_public(ip: IPAddress) -> bool:
    """Globally routable unicast that no IPv4 form hides an inside address behind."""
    return refusal(ip) is None


def literal_address(host: str) -> IPAddress | None:
    """``host`` as the address it spells, if it spells one the way the HTTP client reads
    it: an IPv6 literal, or any IPv4 form ``inet_aton`` (hence ``getaddrinfo``) accepts,
    such as ``2130706433``, ``0x7f.1``, ``017700000001`` or ``127.1``."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    # inet_aton stops at whitespace and ignores the rest ("127.1 x", "127.0.0.1 ::1");
    # getaddrinfo, which the HTTP client asks, reads no such host as a number.
    if any(c.isspace() for c in host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):  # not a numeric form: a name for DNS
        return None


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to, in resolver order, without duplicates."""
    literal = literal_address(host)
    if literal is not None:
        return [literal]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise Unresolvable(f"cannot resolve {host}: {exc}") from None
    found: list[IPAddress] = []
    for _family, _type, _proto, _name, sockaddr in infos:
        # Drop an IPv6 zone ("fe80::1%eth0"); the address alone decides.
        ip = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
        if ip not in found:
            found.append(ip)
    if not found:
        raise Unresolvable(f"cannot resolve {host}: no addresses")
    return found


def allowed_addresses(host: str, port: int, *, allow_private: bool) -> list[IPAddress]:
    """The addresses a delivery to ``host`` may connect to. If any answer is non-public the
    whole name is refused: a name that also points inside is not one to trust with a pick."""
    addresses = resolve(host, port)
    if not allow_private:
        inside = [f"{ip}: {why}" for ip in addresses if (why := refusal(ip)) is not None]
        if inside:
            raise RefusedTarget(
                f"{host} resolves to a private, loopback or link-local address "
                f"({'; '.join(inside)})"
            )
    return addresses


def url_host_port(url: str) -> tuple[str, int]:
    """The host and port a webhook URL names; :class:`RefusedTarget` if it names none."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # a malformed port or IPv6 literal
        raise RefusedTarget(f"invalid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise RefusedTarget("invalid URL: not http or https")
    if not parts.hostname:
        raise RefusedTarget("invalid URL: no host")
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def check_webhook_url(url: str, *, allow_private: bool, field: str = "url") -> None:
    """The set-time check: refuse a URL whose host is, or resolves to, a non-public address.

    A name that does not resolve (yet) is accepted: DNS may simply not be set up at the
    moment the merchant configures the URL, and every delivery checks again anyway.
    """
    if allow_private:
        return
    try:
        host, port = url_host_port(url)
        allowed_addresses(host, port, allow_private=False)
    except Unresolvable:
        return
    except RefusedTarget as exc:
        raise InvalidInput(field, str(exc)) from None
