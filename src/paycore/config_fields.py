"""The converters and checks of ``Settings`` fields: each turns a value given in Python or
read from a ``PAYCORE_*`` environment string into its type, or refuses it with
``InvalidInput`` naming the setting, so a typo fails at startup and not on the first request
that needs it. ``paycore.config`` holds the fields themselves; the converters of the price
settings are ``paycore.prices.options``'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import attrs

from .domain.tokens import to_checksum
from .errors import InvalidInput


def staking_contract(raw: str | None) -> str | None:
    return None if raw in (None, "") else to_checksum(raw, "staking_contract")


def optional_text(raw: str | None) -> str | None:
    """``PAYCORE_REDIS_URL=`` (set but empty) means unset, as leaving it out does."""
    return (raw.strip() or None) if isinstance(raw, str) else raw


def optional_base(raw: str | None) -> str | None:
    """A base URL that paths are appended to: no trailing slash; empty means unset."""
    text = optional_text(raw)
    return text.rstrip("/") if text else None


def absolute_url(_instance: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """An absolute http(s) address, so a typo fails at startup and not in a buyer's link."""
    if value is None:
        return
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise InvalidInput(attribute.name, "must be an absolute http(s) address")


def flag(raw: bool | str) -> bool:
    """``PAYCORE_WEBHOOK_ALLOW_PRIVATE=0`` must mean off, which ``bool("0")`` would not."""
    if isinstance(raw, str):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    return bool(raw)


def decimal(raw: object) -> Decimal:
    """A Decimal from a number or an environment string, exact (``str`` first, never float)."""
    return Decimal(str(raw))


def at_least_one(raw: int | str) -> int:
    """A count that must be at least 1 (a cap of 0 would refuse every socket)."""
    value = int(raw)
    if value < 1:
        raise InvalidInput("settings", f"expected a whole number of at least 1, got {raw!r}")
    return value


def queue_size(raw: int | str) -> int:
    value = int(raw)
    if value < 1:
        raise InvalidInput("ws_queue_size", "must be at least 1")
    return value


def stream_cap(raw: int | str) -> int:
    value = int(raw)
    if value < 0:
        raise InvalidInput("settings", f"expected a count of streams (0 or more), got {raw!r}")
    return value


def positive(raw: float | str) -> float:
    """Seconds from a number or an environment string; zero or less makes no schedule."""
    value = float(raw)
    if not value > 0:
        raise InvalidInput("settings", f"expected a positive number of seconds, got {raw!r}")
    return value


def whole_seconds(raw: int | str) -> int:
    """A ``Retry-After`` value: HTTP allows whole seconds only, and 0 would invite a storm."""
    value = int(raw)
    if value < 1:
        raise InvalidInput("storage_retry_after", "must be at least 1 second")
    return value


def age(raw: int | str) -> int:
    """Whole seconds, 0 or more: a retention age."""
    value = int(raw)
    if value < 0:
        raise InvalidInput("settings", f"expected 0 or more seconds, got {raw!r}")
    return value


def batch(raw: int | str) -> int:
    value = int(raw)
    if value < 1:
        raise InvalidInput("retention_batch", "must be at least 1")
    return value


def count(raw: int | str, name: str) -> int:
    """A count that must be 1 or more, naming its setting when it is not."""
    value = int(raw)
    if value < 1:
        raise InvalidInput(name, "must be at least 1")
    return value


def export_batch(raw: int | str) -> int:
    return count(raw, "export_batch")


def per_minute(raw: int | str, name: str) -> int:
    """A rate per minute: 0 turns the limit off."""
    value = int(raw)
    if value < 0:
        raise InvalidInput(name, "must be 0 (no limit) or more")
    return value


def ip_challenge_limit(raw: int | str) -> int:
    return per_minute(raw, "ip_challenge_limit")


def ip_registration_limit(raw: int | str) -> int:
    return per_minute(raw, "ip_registration_limit")


def link_open_limit(raw: int | str) -> int:
    return count(raw, "link_open_limit")


def link_open_window(raw: int | str) -> int:
    return count(raw, "link_open_window")


def webhook_owner_concurrency(raw: int | str) -> int:
    return count(raw, "webhook_owner_concurrency")


def webhook_url_concurrency(raw: int | str) -> int:
    return count(raw, "webhook_url_concurrency")


def webhook_redeliver_limit(raw: int | str) -> int:
    return count(raw, "webhook_redeliver_limit")


def webhook_redeliver_window(raw: int | str) -> int:
    return count(raw, "webhook_redeliver_window")


def schedule(raw: Iterable[float | str] | str) -> tuple[float, ...]:
    """A tuple of delays from a sequence or a comma-separated string (``"5,30,120"``)."""
    items = raw.split(",") if isinstance(raw, str) else raw
    delays = tuple(positive(item) for item in items if str(item).strip())
    if not delays:
        raise InvalidInput("webhook_retry_schedule", "needs at least one delay")
    return delays


def prices(raw: Mapping[str, object]) -> dict[str, Decimal]:
    """Accept ``{"1:0xabc..": "3000"}`` with any address case; keys end up canonical."""
    from .domain.money import parse_amount
    from .domain.tokens import TokenId

    return {
        str(TokenId.parse(k, "prices")): parse_amount(v, f"prices[{k}]") for k, v in raw.items()
    }
