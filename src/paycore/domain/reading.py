"""The typed request reader: a POST body or a query, read into its request class once.

A request is an attrs class whose fields are typed with the names of
``paycore.domain.fields`` (``Uint``, ``ChainId``, ``Amount``, ``Address``, ``Token``) or plain
``str``, ``dict`` and ``tuple[...]``; :func:`read` parses it with a cattrs converter whose
hook for each type is the project's one parser for that kind of value, run strictly (no
coercion: ``1.0`` is not an integer, ``"ab"`` is not a list, ``5`` is not a string),
refusing fields the class does not declare. Errors come back as ``InvalidInput`` for the
first bad field, named as on the wire (``acceptedTokens[2]``), with the parser's one-line
reason.

It lives in the domain, below the services, because the services and the ``Gateway`` read
a host's JSON fields (a ``Mapping`` handed to ``Gateway.create_invoice``, say) with the same
rules as the endpoint; the HTTP layer's ``paycore.api.wire`` adds the OpenAPI schemas
derived from the same declarations and re-exports this reader. No I/O.
"""

from __future__ import annotations

import functools
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, override

from ..errors import InvalidInput
from . import fields as f

T = TypeVar("T")

#: How deep a JSON value may nest. Nothing paycore reads is deeper than a few levels; a
#: body nested thousands of levels is only ever an attack on the parser's stack.
MAX_DEPTH = 32


class _Problem(ValueError):
    """A type hook's refusal; :func:`read` adds the field's wire name."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def _via(parse: Callable[[object, str], Any]) -> Callable[[object, Any], Any]:
    """A cattrs hook from one of the project's parsers (which name the field themselves)."""

    def hook(raw: object, _type: Any) -> Any:
        try:
            return parse(raw, "")
        except InvalidInput as exc:
            raise _Problem(exc.reason) from None

    return hook


def _text(raw: object, _type: Any) -> str:
    if not isinstance(raw, str):
        raise _Problem("must be a string")
    return raw


def _flag(raw: object, _type: Any) -> bool:
    """JSON true or false only: "false" as a string would be truthy."""
    if not isinstance(raw, bool):
        raise _Problem("must be true or false")
    return raw


def _object(raw: object, _type: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _Problem("must be an object")
    return raw


def _strings(items: object, item: Callable[[object, Any], Any]) -> tuple[Any, ...]:
    if not isinstance(items, list):
        raise _Problem("must be an array")
    out = []
    for i, value in enumerate(items):
        try:
            out.append(item(value, None))
        except _Problem as exc:
            raise _Problem(f"[{i}]: {exc.reason}") from None
    return tuple(out)


def _salt(raw: object, _type: Any) -> object:
    if isinstance(raw, bool) or not isinstance(raw, (int, float, str)):
        raise _Problem("must be a unix timestamp in seconds")
    if isinstance(raw, str) and not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
        raise _Problem("must be a unix timestamp in seconds")
    if isinstance(raw, float) and not math.isfinite(raw):
        raise _Problem("must be a unix timestamp in seconds")
    return raw


def _raw_tx(raw: object, _type: Any) -> object:
    if not isinstance(raw, (str, dict)):
        raise _Problem("must be 0x hex (EVM) or a transaction object (Tron)")
    return raw


def _uint(raw: object, field: str) -> int:
    return f.parse_uint(raw, field)


def _big_uint(raw: object, field: str) -> int:
    return f.parse_uint(raw, field, digits=f.BIG_UINT_DIGITS)


_HOOKS: dict[Any, Callable[[object, Any], Any]] = {
    str: _text,
    bool: _flag,
    f.Uint: _via(_uint),
    f.ChainId: _via(_uint),
    f.BigUint: _via(_big_uint),
    f.Amount: _via(f.parse_wire_amount),
    f.Address: _via(f.parse_address_text),
    f.Token: _via(f.parse_token),
    f.Salt: _salt,
    f.RawTx: _raw_tx,
}


def _present(hook: Callable[[object, Any], Any]) -> Callable[[object, Any], Any]:
    """``null`` for a field that is not optional reads as the field missing."""

    def checked(raw: object, tp: Any) -> Any:
        if raw is None:
            raise _Problem("required")
        return hook(raw, tp)

    return checked


_converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
for _type, _hook in _HOOKS.items():
    _converter.register_structure_hook(_type, _present(_hook))


def _origin(tp: Any) -> Any:
    return get_origin(tp) or tp


_converter.register_structure_hook_func(lambda t: _origin(t) is dict, _present(_object))


def _item_hook(tp: Any) -> Callable[[object, Any], Any]:
    """An array's item parser; an array of objects (batch payout rows) takes each as an
    object, which its own parser (``paycore.payouts.rows``) reads after."""
    return _object if _origin(tp) is dict else _HOOKS[tp]


_converter.register_structure_hook_func(
    lambda t: _origin(t) is tuple,
    _present(lambda raw, t: _strings(raw, _item_hook(get_args(t)[0]))),
)


def camel(name: str) -> str:
    """``chain_id`` -> ``chainId``: the wire's spelling of a field."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def wire_name(field: attrs.Attribute[Any]) -> str:
    return str(field.metadata.get("wire") or camel(field.name))


_REGISTERED: set[type] = set()


def register(cls: type[T]) -> type[T]:
    """Make ``cls`` readable by :func:`read`: wire names, and unknown fields refused."""
    renames: dict[str, Any] = {
        a.name: override(rename=wire_name(a)) for a in attrs.fields(typing.cast(Any, cls))
    }
    hook = make_dict_structure_fn(cls, _converter, _cattrs_forbid_extra_keys=True, **renames)
    _converter.register_structure_hook(cls, hook)
    _REGISTERED.add(cls)
    return cls


def read(cls: type[T], data: Mapping[str, Any], *, query: bool = False) -> T:
    """``data`` (a parsed JSON body, or a query's name -> text) as ``cls``; InvalidInput
    names the first bad field. In a query an empty value counts as absent."""
    if cls not in _REGISTERED:
        register(cls)
    if query:
        data = _query_values(cls, data)
    else:
        _check_depth(data, 0)
    try:
        return _converter.structure(dict(data), cls)
    except ClassValidationError as exc:
        raise _first(cls, exc) from None


def _query_values(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """A query's values as a body's: empty means absent, a list field's text is split at
    commas (docs/interface.md §Staking: ``tokenList=0xa,0xb``), and names the request does
    not declare are left out. A URL gathers parameters nobody meant for the endpoint (a
    cache-buster, a tracking tag); a JSON body is written for it, so there an unknown
    field is refused as the typo it most likely is."""
    hints = _resolved(cls)
    fields = attrs.fields(typing.cast(Any, cls))
    known = {wire_name(a) for a in fields}
    lists = {wire_name(a) for a in fields if _is_list(hints[a.name])}
    out: dict[str, Any] = {}
    for key, value in data.items():
        if value == "" or key not in known:
            continue
        out[key] = [p for p in value.split(",") if p] if key in lists else value
    return out


def _is_list(tp: Any) -> bool:
    if get_origin(tp) in (typing.Union, types.UnionType):
        return any(_is_list(a) for a in get_args(tp))
    return get_origin(tp) is tuple


def _first(cls: type, group: ClassValidationError) -> InvalidInput:
    names = {a.name: wire_name(a) for a in attrs.fields(cls)}
    for exc in group.exceptions:
        if isinstance(exc, ForbiddenExtraKeysError):
            extra = sorted(exc.extra_fields)[0]
            return InvalidInput(shown(extra), "is not a field of this request")
        note = next((n for n in getattr(exc, "__notes__", ()) if hasattr(n, "name")), None)
        name = names.get(getattr(note, "name", ""), "body")
        if isinstance(exc, KeyError):
            return InvalidInput(name, "required")
        if isinstance(exc, _Problem):
            reason = exc.reason
            if reason.startswith("["):  # an item of a list: acceptedTokens[2]: ...
                index, _, reason = reason.partition(": ")
                return InvalidInput(name + index, reason)
            return InvalidInput(name, reason)
        if isinstance(exc, (ClassValidationError, IterableValidationError)):
            return InvalidInput(name, "is malformed")
        if isinstance(exc, InvalidInput):
            return exc
        return InvalidInput(name, "is malformed")
    return InvalidInput("body", "is malformed")


def _check_depth(value: object, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise InvalidInput("body", f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        for item in value.values():
            _check_depth(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_depth(item, depth + 1)


# -- the published schemas --------------------------------------------------------------------


@functools.cache
def _resolved(cls: type) -> dict[str, Any]:
    """A request class's field types, resolved once: every app build asks for each route's
    (the OpenAPI fragments), and resolving string annotations is most of that cost."""
    return typing.get_type_hints(cls, include_extras=False)


def shown(name: str) -> str:
    """A client-chosen name as it may appear in a one-line error text."""
    return name[:64].encode("unicode_escape").decode("ascii")
