"""Write the endpoint index of docs/interface.md from the route table.

The index is the table between the ``endpoint-index`` markers: one row per route (method,
path, how it treats session headers, summary), in route-table order. Generating it means the
reference cannot silently miss an endpoint the code serves; the prose sections below it are
written by hand, and tests/docs/test_interface_doc.py checks both against the table.

    python scripts/interface_index.py          # rewrite the block in place
    python scripts/interface_index.py --check  # exit 1 if the block is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from paycore.api.routing import Route
from paycore.api.table import build_router

DOC = Path(__file__).resolve().parents[1] / "docs" / "interface.md"
START = "<!-- endpoint-index:start -->"
END = "<!-- endpoint-index:end -->"

#: Route.session as a reader of the reference needs it said.
SESSION_WORDS = {"owner": "owner", "optional": "optional", "none": "ignored"}


def routes() -> list[Route]:
    """Every routed endpoint, in the order the router tries them (the table, then OpenAPI)."""
    return list(build_router().routes)


def render(table: list[Route] | None = None) -> str:
    """The index block, markers included."""
    lines = [
        START,
        "| Method | Path | Session headers | Summary |",
        "| --- | --- | --- | --- |",
    ]
    for route in routes() if table is None else table:
        methods = ", ".join(route.methods)
        summary = route.summary.replace("|", "\\|")
        lines.append(f"| {methods} | `{route.path}` | {SESSION_WORDS[route.session]} | {summary} |")
    lines.append(END)
    return "\n".join(lines)


def updated(text: str, block: str) -> str:
    """``text`` with its index block replaced by ``block``."""
    head, sep, rest = text.partition(START)
    if not sep or END not in rest:
        raise SystemExit(f"{DOC}: the {START} ... {END} markers are missing")
    return head + block + rest.split(END, 1)[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail instead of writing")
    args = parser.parse_args(argv)
    text = DOC.read_text(encoding="utf-8")
    new = updated(text, render())
    if new == text:
        return 0
    if args.check:
        print(f"{DOC} is out of date: run python scripts/interface_index.py", file=sys.stderr)
        return 1
    DOC.write_text(new, encoding="utf-8")
    print(f"rewrote the endpoint index of {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
