"""A small JSON Schema checker for the keywords paycore's OpenAPI document uses.

Written here rather than imported so the suite checks the served document with code that
does not share a line with the server. Unknown keywords fail loudly: the document growing a
keyword this checker ignores must not silently pass.
"""

from __future__ import annotations

import re
from typing import Any

_KNOWN = {
    "type",
    "required",
    "properties",
    "items",
    "enum",
    "pattern",
    "minItems",
    "additionalProperties",
    "oneOf",
    "description",
    "format",
}
_TYPES: dict[str, Any] = {
    "string": str,
    "object": dict,
    "array": list,
    "boolean": bool,
}


def problems(value: Any, schema: dict[str, Any], where: str = "$") -> list[str]:
    """Every way ``value`` breaks ``schema``; empty when it conforms."""
    unknown = set(schema) - _KNOWN
    if unknown:
        return [f"{where}: checker does not know {sorted(unknown)}"]
    if "oneOf" in schema:
        matching = [s for s in schema["oneOf"] if not problems(value, s, where)]
        return [] if len(matching) == 1 else [f"{where}: matches {len(matching)} of oneOf"]
    found: list[str] = []
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]  # a cursor is ["string", "null"]
    if kind is not None and not any(_is(value, k) for k in kinds):
        return [f"{where}: {type(value).__name__} is not {kind}"]
    if "enum" in schema and value not in schema["enum"]:
        found.append(f"{where}: {value!r} not in {schema['enum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        found.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                found.append(f"{where}: missing {name}")
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties")
        for name, item in value.items():
            if name in props:
                found += problems(item, props[name], f"{where}.{name}")
            elif isinstance(extra, dict):
                found += problems(item, extra, f"{where}.{name}")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            found.append(f"{where}: fewer than {schema['minItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                found += problems(item, schema["items"], f"{where}[{i}]")
    return found


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "null":
        return value is None
    return isinstance(value, _TYPES[kind])
