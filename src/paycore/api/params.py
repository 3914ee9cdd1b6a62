"""Reading request parameters with the same one-line errors everywhere."""

from __future__ import annotations

from ..errors import InvalidInput
from .http import Request

_MAX_INT_DIGITS = 18


def query_int(request: Request, name: str) -> int | None:
    raw = request.query(name)
    if raw is None or raw == "":
        return None
    if not raw.isascii() or not raw.isdigit() or len(raw) > _MAX_INT_DIGITS:
        raise InvalidInput(name, "must be a non-negative integer")
    return int(raw)


def body_str(body: dict[str, object], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidInput(name, "required, a string")
    return value
