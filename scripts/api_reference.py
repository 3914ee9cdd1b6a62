"""Write the plain-text Python API reference of docs/api.md from the objects themselves.

The reference is the block between the ``api-reference`` markers: the public names of
``paycore``, the ``Gateway`` with every public method and the sub-services it holds,
``Settings`` and ``ChainConfig`` field by field, the records, the storage protocols, the
fake chain of ``paycore.testing`` and the pytest fixtures, each with its signature and the
first sentence of its docstring (a field: its ``#:`` comment). It reads as it is in the
repository, without building the site; the mkdocstrings directives below it render the full
docstrings on the site. tests/docs/test_api_reference.py checks the committed copy is what
this script writes now, so the page cannot drift from the code.

    python scripts/api_reference.py          # rewrite the block in place
    python scripts/api_reference.py --check  # exit 1 if the block is out of date
"""

from __future__ import annotations

import argparse
import ast
import enum
import inspect
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs

DOC = Path(__file__).resolve().parents[1] / "docs" / "api.md"
START = "<!-- api-reference:start -->"
END = "<!-- api-reference:end -->"


def purpose(obj: object) -> str:
    """The first sentence of ``obj``'s docstring, in Markdown's backticks."""
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else obj.__doc__
    return _first_sentence(inspect.cleandoc(doc or ""))


def _first_sentence(doc: str) -> str:
    para = " ".join(doc.strip().split("\n\n", 1)[0].split())
    sentence = re.split(r"(?<=[.!?])\s+(?=[A-Z`(])", para, maxsplit=1)[0]
    return re.sub(r"``([^`]+)``", r"`\1`", re.sub(r":\w+:`~?([^`]+)`", r"`\1`", sentence))


def _default(value: object) -> str:
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, (set, frozenset)):
        inner = ", ".join(sorted(repr(v) for v in value))
        return f"frozenset({{{inner}}})" if inner else "frozenset()"
    if callable(value):
        module = getattr(value, "__module__", None) or ""
        return f"{module}.{getattr(value, '__qualname__', repr(value))}".lstrip(".")
    text = repr(value)
    if len(text) > 80 and isinstance(value, Mapping):  # the default chains: their ids
        text = "{" + ", ".join(f"{k!r}: ..." for k in value) + "}"
    return text


def _annotation(value: object) -> str:
    return value if isinstance(value, str) else inspect.formatannotation(value)


def signature(func: Callable[..., Any], name: str | None = None) -> str:
    """``name(params) -> returns`` as written in the source (annotations stay text)."""
    sig = inspect.signature(func)
    parts: list[str] = []
    star_done = False
    for param in sig.parameters.values():
        if param.name in ("self", "cls"):
            continue
        if param.kind is param.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        text = param.name
        if param.kind is param.VAR_POSITIONAL:
            text, star_done = f"*{param.name}", True
        elif param.kind is param.VAR_KEYWORD:
            text = f"**{param.name}"
        if param.annotation is not param.empty:
            text += f": {_annotation(param.annotation)}"
        if param.default is not param.empty:
            text += f" = {_default(param.default)}"
        parts.append(text)
    returns = ""
    if sig.return_annotation is not sig.empty:
        returns = f" -> {_annotation(sig.return_annotation)}"
    return f"{name or func.__name__}({', '.join(parts)}){returns}"


def public_members(cls: type) -> Iterator[tuple[str, object]]:
    """The public methods and properties ``cls`` defines or inherits from paycore, in
    source order."""
    seen: set[str] = set()
    for klass in cls.__mro__:
        if klass is object or not klass.__module__.startswith("paycore"):
            continue
        for name, member in vars(klass).items():
            if name.startswith("_") or name in seen:
                continue
            seen.add(name)
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            if inspect.isfunction(member) or isinstance(member, property):
                yield name, member


def _item(code: str, text: str, after: str = "") -> str:
    """A list item: ``code`` in backticks, ``after`` it, then its purpose when it has one."""
    return f"- `{code}`{after}" + (f": {text}" if text else "")


def _members(cls: type, prefix: str = "") -> list[str]:
    lines = []
    for name, member in public_members(cls):
        if isinstance(member, property):
            assert member.fget is not None
            returns = inspect.signature(member.fget).return_annotation
            kind = f": {_annotation(returns)}" if returns is not inspect.Signature.empty else ""
            lines.append(_item(f"{prefix}{name}{kind}", purpose(member.fget), " (property)"))
        else:
            assert callable(member)
            lines.append(_item(f"{prefix}{signature(member, name)}", purpose(member)))
    return lines


def field_comments(cls: type) -> dict[str, str]:
    """The ``#:`` comment above each field of ``cls``, read from its source."""
    source, start = inspect.getsourcelines(cls)
    comments: dict[str, str] = {}
    pending: list[str] = []
    for line in source:
        stripped = line.strip()
        if stripped.startswith("#:"):
            pending.append(stripped[2:].strip())
            continue
        match = re.match(r"^\s+(\w+)\s*:", line)
        if match and pending:
            comments[match[1]] = _first_sentence(" ".join(pending))
        if stripped and not stripped.startswith("#"):
            pending = []
    return comments


def _fields(cls: type) -> list[str]:
    comments = field_comments(cls)
    lines = []
    for field in attrs.fields(cls):
        text = f"{field.name}: {_annotation(field.type)}"
        if isinstance(field.default, attrs.Factory):  # type: ignore[arg-type]
            text += f" = {_default(field.default.factory())}"
        elif field.default is not attrs.NOTHING:
            text += f" = {_default(field.default)}"
        note = comments.get(field.name) or field.metadata.get("doc", "")
        lines.append(_item(text, note))
    return lines


def _class(
    title: str, cls: type, *, fields: bool = False, members: bool = True, init: bool = False
) -> list[str]:
    lines = [f"### {title}", ""]
    if init:
        lines += [f"`{signature(cls.__init__, cls.__name__)}`", ""]  # type: ignore[misc]
    lines += [purpose(cls), ""]
    if fields:
        lines += _fields(cls) + [""]
    if isinstance(cls, type) and issubclass(cls, enum.Enum):
        values = ", ".join(f"`{m.name}` (`{m.value}`)" for m in cls)
        lines += [f"Values: {values}.", ""]
    if members:
        found = _members(cls)
        if found:
            lines += [*found, ""]
    return lines


def _storage_tx(storage_tx: type) -> list[str]:
    """``StorageTx`` protocol by protocol (``paycore.storage.protocols``), each under a
    heading of its own with its module's first sentence: what a plugin implements, by
    concern, each concern's duties in its module's docstring."""
    lines = ["### paycore.storage.StorageTx", "", purpose(storage_tx), ""]
    lines += [
        "It declares no method of its own: it is these protocols in one, each in a module "
        "whose docstring states what storage owes for that concern (locking, order, "
        "idempotence, what is one atomic step).",
        "",
    ]
    for base in storage_tx.__mro__[1:]:
        if not base.__module__.startswith("paycore.") or base.__name__ == "Protocol":
            continue
        module = sys.modules[base.__module__]
        lines += [f"#### {base.__name__} (`{base.__module__}`)", ""]
        lines += [f"{purpose(module)} {purpose(base)}".strip(), ""]
        lines += [*_members(base), ""]
    return lines


def _fixtures() -> list[str]:
    """The fixtures of ``paycore.testing.plugin``, read from its source: pytest wraps them."""
    from paycore.testing import plugin

    tree = ast.parse(Path(plugin.__file__).read_text(encoding="utf-8"))
    lines = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(
            ast.unparse(d).startswith("pytest.fixture") for d in node.decorator_list
        ):
            args = ", ".join(a.arg for a in node.args.args)
            returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
            doc = _first_sentence(ast.get_docstring(node) or "")
            lines.append(_item(f"{node.name}({args}){returns}", doc))
    return lines


def sub_services() -> list[tuple[str, type]]:
    """The public attributes of a Gateway that hold one of paycore's service objects."""
    from paycore import Gateway, Settings

    gateway = Gateway(Settings(database_url="memory://"), entry_points=False)
    try:
        found = []
        for name, value in vars(gateway).items():
            cls = type(value)
            if (
                not name.startswith("_")
                and cls.__module__.startswith("paycore.")
                and cls.__module__ != "paycore.config"
                and not callable(value)
            ):
                found.append((name, cls))
        return found
    finally:
        gateway.close()


def render() -> str:
    """The reference block, markers included."""
    import paycore
    from paycore import ChainConfig, Deposit, Gateway, Invoice, Payment, Settings, Status
    from paycore.storage import PruneBatch, Storage, StorageTx
    from paycore.testing.chain import FakeChain

    lines = [
        START,
        "<!-- written by scripts/api_reference.py; do not edit by hand -->",
        "",
        "### The package `paycore`",
        "",
        purpose(paycore),
        "",
    ]
    for name in sorted(paycore.__all__):
        value = getattr(paycore, name)
        what = purpose(value) if inspect.isclass(value) or callable(value) else repr(value)
        lines.append(_item(f"paycore.{name}", what))
    lines += ["", "### Gateway", "", f"`{signature(Gateway.__init__, 'Gateway')}`", ""]
    lines += [purpose(Gateway), ""]
    lines += _members(Gateway, "gateway.")
    lines += ["", "Sub-services, each an attribute of the gateway:", ""]
    services = sub_services()
    for name, cls in services:
        lines.append(
            _item(
                f"gateway.{name}", f"`{cls.__module__}.{cls.__qualname__}`. {purpose(cls)}".strip()
            )
        )
    lines.append("")
    for name, cls in services:
        found = _members(cls, f"gateway.{name}.")
        if found:
            lines += [f"#### gateway.{name} ({cls.__qualname__})", "", *found, ""]
    lines += _class("Settings", Settings, fields=True)
    lines += _class("ChainConfig", ChainConfig, fields=True)
    for record in (Invoice, Payment, Deposit):
        lines += _class(record.__name__, record, fields=True, members=False)
    lines += _class("Status", Status, members=False)
    lines += _class("paycore.storage.Storage", Storage)
    lines += _storage_tx(StorageTx)
    lines += _class("paycore.storage.PruneBatch", PruneBatch, fields=True, members=False)
    lines += _class("paycore.testing.chain.FakeChain", FakeChain, init=True)
    lines += [
        "### The pytest fixtures (`paycore.testing.plugin`)",
        "",
        "Loaded in every pytest session of a project that installs paycore; a test gets one "
        "by naming it ([testing.md](testing.md)).",
        "",
        *_fixtures(),
        "",
        END,
    ]
    return "\n".join(lines)


def current(text: str) -> str:
    """The block as it stands in ``text``."""
    start = text.index(START)
    return text[start : text.index(END, start) + len(END)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the block is stale")
    args = parser.parse_args(argv)
    text = DOC.read_text(encoding="utf-8")
    fresh = render()
    if args.check:
        stale = current(text) != fresh
        if stale:
            print("docs/api.md is stale: run python scripts/api_reference.py", file=sys.stderr)
        return 1 if stale else 0
    DOC.write_text(text.replace(current(text), fresh), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
