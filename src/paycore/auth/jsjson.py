"""``JSON.stringify`` of JavaScript, reproduced byte for byte for parsed JSON values.

Salt-signed calls are signed over the text a browser's ``JSON.stringify`` produced, and the
server has only the re-parsed body to rebuild it from. Python's ``json.dumps`` differs in
ways that break the signature: it writes numbers the Python way (``1e+21`` vs ``1e21``,
``1.5e-07`` vs ``1.5e-7``, ``1.0`` vs ``1``), keeps ``-0.0``, writes lone surrogates raw and
keeps object keys in insertion order even when they look like array indexes, which a
JavaScript object moves to the front in ascending numeric order. ``tests/node`` checks this
module against Node.js itself.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
# Control characters, the two that need a backslash, and surrogates: a surrogate code point
# in a Python str is always a lone one (json.loads joins escaped pairs), and ES2019's
# well-formed JSON.stringify writes a lone surrogate as a \u escape. U+2028/U+2029 stay raw.
_NEEDS_ESCAPE = re.compile('[\\x00-\\x1f"\\\\\\ud800-\\udfff]')

#: Largest array index of a JavaScript object: keys "0" .. "4294967294" are ordered first.
_MAX_ARRAY_INDEX = 2**32 - 2


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    return _ESCAPES.get(char) or f"\\u{ord(char):04x}"


def quote(text: str) -> str:
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, text) + '"'


def number(value: float) -> str:
    """ECMAScript ``Number::toString`` (radix 10) of a finite double; NaN/Infinity -> null.

    Python's ``repr`` already yields the shortest round-tripping digits, as ECMAScript does;
    only the layout around those digits differs, so it is rebuilt from them.
    """
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "0"  # -0 too: JSON.stringify(-0) is "0"
    sign = "-" if value < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    all_digits = whole + fraction
    digits = all_digits.lstrip("0")
    # value = 0.<digits> * 10**n
    n = len(whole) + int(exponent or 0) - (len(all_digits) - len(digits))
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        e = n - 1
        exp_text = f"e+{e}" if e >= 0 else f"e-{-e}"
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + exp_text
    return sign + text


def _integer(value: int) -> str:
    # A JSON integer lives in JavaScript as a double: exact below 2**53, rounded above.
    if -(2**53) <= value <= 2**53:
        return str(value)
    try:
        return number(float(value))
    except OverflowError:
        return "null"  # JSON.parse gave Infinity, which JSON.stringify writes as null


def _array_index(key: str) -> int | None:
    if key.isascii() and key.isdigit() and (key == "0" or key[0] != "0"):
        index = int(key)
        if index <= _MAX_ARRAY_INDEX:
            return index
    return None


def _ordered_keys(obj: Mapping[str, Any]) -> list[str]:
    """Property order of a JavaScript object built with these keys in this order."""
    indexed: list[tuple[int, str]] = []
    named: list[str] = []
    for key in obj:
        if not isinstance(key, str):
            raise TypeError(f"object keys must be strings, not {type(key).__name__}")
        index = _array_index(key)
        if index is None:
            named.append(key)
        else:
            indexed.append((index, key))
    indexed.sort()
    return [key for _, key in indexed] + named


def stringify(value: Any) -> str:
    """``JSON.stringify(value)`` for what ``json.loads`` returns (dict, list, str, numbers...)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, int):
        return _integer(value)
    if isinstance(value, float):
        return number(value)
    if isinstance(value, Mapping):
        members = (quote(key) + ":" + stringify(value[key]) for key in _ordered_keys(value))
        return "{" + ",".join(members) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(stringify(item) for item in value) + "]"
    raise TypeError(f"{type(value).__name__} is not a JSON value")
