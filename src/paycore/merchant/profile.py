"""The merchant profile record and the rules its three fields obey.

Why so strict: every field ends up on a page a buyer trusts. The logo URL becomes an
``<img src>`` and its origin enters the page's Content-Security-Policy header, so it is
https only, with a host, without credentials, and without any character a CSP header or an
attribute would read as a separator. The support contact becomes a ``mailto:`` or https
link, so it is one of those two and nothing a browser would run.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import attrs

from ..domain.records import Json
from ..errors import InvalidInput

MAX_NAME = 100
#: Longest logo URL or support contact: enough for any CDN path, short enough for a header.
MAX_URL = 500
#: A plain e-mail address: one @, no spaces, a dot in the domain. Not RFC 5322 in full: the
#: page turns it into a mailto: link, where quoted local parts and comments only confuse.
_EMAIL = re.compile(r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")
#: Characters that would split a CSP source list or an HTML attribute.
_UNSAFE = set(" \t\r\n;,'\"<>\\`")
#: One DNS label: what a CSP host-source may hold besides dots (no ``*``, no ``%``, no
#: brackets), so the logo's origin is one host and never a wildcard like ``https://*``.
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


@attrs.frozen
class MerchantProfile:
    """One owner's identity on the checkout page; ``None`` fields are not shown."""

    owner: str
    name: str
    logo_url: str | None
    support: str | None
    updated_at: int

    def to_wire(self) -> Json:
        return {
            "ownerAddress": self.owner,
            "name": self.name,
            "logoUrl": self.logo_url,
            "support": self.support,
            "updatedAt": self.updated_at,
        }

    def to_page(self) -> Json:
        """What the checkout page shows: no owner (the invoice has it), no timestamp."""
        return {"name": self.name, "logoUrl": self.logo_url, "support": self.support}

    @property
    def logo_origin(self) -> str | None:
        """``https://host[:port]`` of the logo, the one origin the page's img-src adds."""
        if self.logo_url is None:
            return None
        parts = urlsplit(self.logo_url)
        return f"https://{parts.netloc.lower()}"


@attrs.frozen
class NewProfile:
    """What POST /merchant/profile sets: the whole profile, replacing the stored one
    (``paycore.api.requests.SetMerchantProfile`` adds who claims to set it)."""

    name: str = attrs.field(
        metadata={"doc": "the shop's name, shown to the payer", "schema": {"maxLength": MAX_NAME}}
    )
    logo_url: str | None = attrs.field(
        default=None,
        metadata={"doc": "https URL of the shop's logo image", "schema": {"maxLength": MAX_URL}},
    )
    support: str | None = attrs.field(
        default=None,
        metadata={
            "doc": "support contact: an e-mail address or an https URL",
            "schema": {"maxLength": MAX_URL},
        },
    )


def parse_profile(request: NewProfile, owner: str, now: int) -> MerchantProfile:
    """The stored record for ``request``, or a 400 naming the first bad field."""
    return MerchantProfile(
        owner=owner,
        name=_name(request.name),
        logo_url=_https_url(request.logo_url, "logoUrl"),
        support=_support(request.support),
        updated_at=now,
    )


def _name(raw: str) -> str:
    text = " ".join(raw.split())
    if not text:
        raise InvalidInput("name", "must not be empty")
    if len(text) > MAX_NAME:
        raise InvalidInput("name", f"longer than {MAX_NAME} characters")
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise InvalidInput("name", "must not hold control characters")
    return text


def _https_url(raw: str | None, field: str) -> str | None:
    if raw is None or not raw.strip():
        return None
    text = raw.strip()
    if len(text) > MAX_URL:
        raise InvalidInput(field, f"longer than {MAX_URL} characters")
    if any(c in _UNSAFE or ord(c) < 32 or ord(c) >= 127 for c in text):
        raise InvalidInput(field, "must be an https URL without spaces, quotes, ; or ,")
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 -- raises on a port that is not a number
    except ValueError:
        raise InvalidInput(field, "must be an https URL") from None
    if parts.scheme.lower() != "https" or not parts.hostname:
        raise InvalidInput(field, "must be an https URL")
    if not _hostname(parts.hostname) or parts.netloc.endswith(":"):
        raise InvalidInput(field, "must name one valid host name (no wildcard)")
    if parts.username is not None or parts.password is not None:
        raise InvalidInput(field, "must not carry a user name or password")
    return text


def _hostname(host: str) -> bool:
    """A plain host name (or dotted IPv4): labels of letters, digits and inner hyphens."""
    labels = host.lower().split(".")
    return len(host) <= 253 and all(_LABEL.match(label) for label in labels)


def _support(raw: str | None) -> str | None:
    if raw is None or not raw.strip():
        return None
    text = raw.strip()
    if len(text) > MAX_URL:
        raise InvalidInput("support", f"longer than {MAX_URL} characters")
    if "@" in text and "/" not in text:
        if not _EMAIL.match(text):
            raise InvalidInput("support", "must be an e-mail address or an https URL")
        return text
    if not text.lower().startswith("https://"):
        raise InvalidInput("support", "must be an e-mail address or an https URL")
    return _https_url(text, "support")
