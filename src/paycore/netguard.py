"""Where a webhook may point: public addresses only, unless the operator allows others.

A webhook URL is chosen by a merchant, but the POST comes from inside the operator's
network, so without this check anyone with a wallet could make the gateway call its
database, a cloud metadata service (169.254.169.254) or an admin port on localhost (SSRF).
The check runs twice: when the URL is set, to tell the merchant early, and before every
delivery, because a name that resolved to a public address yesterday can resolve to
127.0.0.1 today. The delivery then connects to the very address that was checked, never
resolving again in between, so a DNS answer cannot change under the check (rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from .errors import InvalidInput

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class RefusedTarget(Exception):
    """The host resolves to an address webhooks may not reach (or does not resolve)."""


class Unresolvable(RefusedTarget):
    """The host has no address at all right now."""


def _embedded_v4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (mapped, 6to4, Teredo client), if any: those
    reach the IPv4 host, so they must pass the IPv4 test."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip.sixtofour is not None:
        return ip.sixtofour
    if ip.teredo is not None:
        return ip.teredo[1]
    return None


def is_public(ip: IPAddress) -> bool:
    """Globally routable unicast. ``is_global`` already excludes private, loopback,
    link-local, shared (100.64/10), documentation and reserved ranges."""
    if isinstance(ip, ipaddress.IPv6Address):
        inner = _embedded_v4(ip)
        if inner is not None and not is_public(inner):
            return False
    return ip.is_global and not ip.is_multicast


def resolve(host: str, port: int) -> list[IPAddress]:
    """Every address ``host`` resolves to, in resolver order, without duplicates."""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
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
        inside = [str(ip) for ip in addresses if not is_public(ip)]
        if inside:
            raise RefusedTarget(
                f"{host} resolves to a private, loopback or link-local address "
                f"({', '.join(inside)})"
            )
    return addresses


def url_host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    if not parts.hostname:
        raise RefusedTarget("the URL has no host")
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


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
    except ValueError as exc:  # a malformed port
        raise InvalidInput(field, str(exc)) from None
