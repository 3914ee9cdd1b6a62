"""The typed request layer: one declaration per request, parsed once, published as-is.

A request is an attrs class whose fields are typed with the names of
``paycore.domain.fields`` (``Uint``, ``ChainId``, ``Amount``, ``Address``, ``Token``) or plain
``str``, ``dict`` and ``tuple[...]``. From that one declaration this module derives

Each field's attrs metadata may add ``doc`` (its description), ``wire`` (its name on the
wire, when not the attribute's camelCase) and ``schema`` (extra JSON Schema keywords such
as ``maxItems``, each one a limit the core enforces, never a second rule of its own).

* the parser (``paycore.domain.reading``, re-exported here: the services and the Gateway
  read a host's fields with it too, so it lives below them): a cattrs converter whose hook
  for each type is the project's one parser for that kind of value, run strictly (no
  coercion: ``1.0`` is not an integer, ``"ab"`` is not a list, ``5`` is not a string),
  refusing fields the class does not declare;
* the OpenAPI schema of the body or query (:func:`body_schema`, :func:`query_parameters`),
  from a table keyed by the same types, so what the document promises is what the parser
  takes.

Why attrs with cattrs rather than msgspec: attrs already carries every record in the core,
so requests are the same kind of object as what they become; cattrs keeps the per-type
hooks in plain Python, where they call the same parsers the rest of the project uses (one
integer parser, one amount parser) instead of a second set of constraints in a schema
language that would have to agree with them. msgspec's speed is not needed on bodies of
at most 64 KiB that are parsed once.

Errors come back as ``InvalidInput`` for the first bad field, named as on the wire
(``acceptedTokens[2]``), with the parser's one-line reason.
"""

from __future__ import annotations

import types
import typing
from typing import Any, get_args, get_origin

import attrs

from ..domain import fields as f
from ..domain.reading import MAX_DEPTH, _resolved, camel, read, register, wire_name

_UINT_TEXT = r"^(0|[1-9][0-9]{0,17})$"
_BIG_UINT_TEXT = r"^(0|[1-9][0-9]{0,77})$"
_EVM = r"0x([0-9a-f]{40}|[0-9A-F]{40})"
_TRON = r"T[1-9A-HJ-NP-Za-km-z]{33}"
_SYMBOL = r"[A-Za-z][A-Za-z0-9._-]{0,15}"
_ADDRESS_DOC = (
    "an EVM address (0x, 40 hex digits, all one case or EIP-55 mixed case) or a Tron address "
    "(base58 T..., or hex 41...); no surrounding whitespace"
)


def _uint_schema(digits: int, pattern: str) -> dict[str, Any]:
    return {
        "anyOf": [
            {"type": "integer", "minimum": 0, "maximum": 10**digits - 1},
            {"type": "string", "pattern": pattern},
        ]
    }


def _schemas(chain_ids: tuple[int, ...]) -> dict[Any, dict[str, Any]]:
    chains: dict[str, Any] = (
        {"anyOf": [{"enum": list(chain_ids)}, {"enum": [str(c) for c in chain_ids]}]}
        if chain_ids
        else _uint_schema(f.UINT_DIGITS, _UINT_TEXT)
    )
    ids = "|".join(str(c) for c in chain_ids) or "[0-9]{1,18}"
    return {
        str: {"type": "string"},
        bool: {"type": "boolean"},
        f.Uint: _uint_schema(f.UINT_DIGITS, _UINT_TEXT),
        f.BigUint: _uint_schema(f.BIG_UINT_DIGITS, _BIG_UINT_TEXT),
        f.ChainId: chains,
        f.Amount: {
            "anyOf": [
                {"type": "string", "pattern": f"^{f.AMOUNT_TEXT.pattern}$"},
                {"type": "integer", "minimum": 0, "maximum": 10**30 - 1},
            ],
            "description": 'a decimal amount as a string, such as "12.50"',
        },
        f.Address: {
            "type": "string",
            "pattern": f"^{_EVM}$",
            "description": _ADDRESS_DOC,
        },
        f.Token: {
            "type": "string",
            "pattern": f"^(({ids}):({_EVM}|{_TRON}|{_SYMBOL})|tron:({_TRON}|{_SYMBOL}))$",
            "description": "{chainId}:{tokenAddress}; the zero address is the native coin. "
            "Also taken: tron:{address} for the Tron chain, and a symbol in place of the "
            "address (1:ETH, 8453:USDC, tron:TRX), stored as the canonical id",
        },
        dict[str, Any]: {"type": "object"},
        f.RawTx: {
            "anyOf": [{"type": "string"}, {"type": "object"}],
            "description": "the signed deployment: 0x hex (EVM) or a Tron transaction object",
        },
        f.Salt: {
            "anyOf": [
                {"type": "integer", "minimum": 0, "maximum": 10**18 - 1},
                {"type": "number", "minimum": 0, "maximum": 10**18 - 1},
                {"type": "string", "pattern": "^[0-9]{1,18}$"},
            ]
        },
    }


def _type_schema(tp: Any, table: dict[Any, dict[str, Any]]) -> tuple[dict[str, Any], bool]:
    """The JSON Schema of a field type, and whether ``null`` is allowed."""
    nullable = False
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        nullable = len(args) < len(get_args(tp))
        tp = args[0]
    if get_origin(tp) is tuple:
        item, _ = _type_schema(get_args(tp)[0], table)
        return {"type": "array", "items": item}, nullable
    return dict(table[tp]), nullable


def body_schema(cls: type, chain_ids: tuple[int, ...] = ()) -> dict[str, Any]:
    """The request body's JSON Schema: every field, which are required, nothing else."""
    table = _schemas(chain_ids)
    hints = _resolved(cls)
    props: dict[str, Any] = {}
    required: list[str] = []
    for a in attrs.fields(cls):
        schema, nullable = _type_schema(hints[a.name], table)
        schema.update(a.metadata.get("schema") or {})
        if a.metadata.get("doc"):
            schema["description"] = a.metadata["doc"]
        if nullable:
            schema = {"anyOf": [schema, {"type": "null"}]}
        props[wire_name(a)] = schema
        if a.default is attrs.NOTHING:
            required.append(wire_name(a))
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        out["required"] = required
    return out


def query_parameters(cls: type, chain_ids: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    """The same fields as query parameters: every value is text there, so each schema is
    the string branch of its type (a list is comma-separated text)."""
    table = _schemas(chain_ids)
    hints = _resolved(cls)
    params: list[dict[str, Any]] = []
    for a in attrs.fields(cls):
        schema, _ = _type_schema(hints[a.name], table)
        schema = _as_text(schema)
        extra = {k: v for k, v in (a.metadata.get("schema") or {}).items() if k != "maxItems"}
        if schema.get("type") == "string":
            schema.update({k: v for k, v in extra.items() if k in ("enum", "maxLength")})
        param: dict[str, Any] = {
            "name": wire_name(a),
            "in": "query",
            "required": a.default is attrs.NOTHING,
            "schema": schema,
        }
        if a.metadata.get("doc"):
            param["description"] = a.metadata["doc"]
        params.append(param)
    return params


def _as_text(schema: dict[str, Any]) -> dict[str, Any]:
    if schema.get("type") == "array":
        item = _as_text(schema["items"])
        pattern = item.get("pattern", "^[^,]+$").strip("^$")
        return {"type": "string", "pattern": f"^{pattern}(,{pattern})*$"}
    for branch in schema.get("anyOf", ()):
        if (
            branch.get("type") == "string"
            or "enum" in branch
            and isinstance(branch["enum"][0], str)
        ):
            return {"type": "string", **{k: v for k, v in branch.items() if k != "type"}}
    out = {k: v for k, v in schema.items() if k != "description"}
    out["type"] = "string"
    return out


__all__ = [
    "MAX_DEPTH",
    "body_schema",
    "camel",
    "query_parameters",
    "read",
    "register",
]
