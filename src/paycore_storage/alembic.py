"""For a host whose own Alembic history shares paycore's database: keep its autogenerate off
paycore's tables.

paycore migrates its tables itself (``paycore migrate``, or ``SqlStorage``'s automatic
upgrade) with a version table of its own, ``paycore_alembic_version``. The host's
``alembic revision --autogenerate`` compares the host's metadata with every table in the
database, so without a filter it proposes dropping each ``paycore_*`` table. In the host's
``env.py``::

    from paycore_storage.alembic import include_object

    context.configure(..., target_metadata=Base.metadata, include_object=include_object)

or, with a filter of the host's own, test names against :data:`PAYCORE_TABLES` or call
:func:`is_paycore_table`. paycore owns the ``paycore_`` prefix: a host table named so is
left out too.
"""

from __future__ import annotations

from typing import Any

from .migrations import VERSION_TABLE
from .tables import metadata

#: Every table paycore's migrations create, its version table included.
PAYCORE_TABLES: frozenset[str] = frozenset({*metadata.tables, VERSION_TABLE})
#: The prefix every paycore table has; tables of later (or earlier) releases too.
PREFIX = "paycore_"


def is_paycore_table(name: str | None) -> bool:
    """Whether the table ``name`` is paycore's, this release's or another's."""
    return bool(name) and (name in PAYCORE_TABLES or str(name).startswith(PREFIX))


def include_object(
    object: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
) -> bool:
    """Alembic's ``include_object`` hook: False for paycore's tables and for everything of
    theirs (columns, indexes, constraints), so autogenerate neither drops nor alters them."""
    if type_ == "table":
        return not is_paycore_table(name)
    table = getattr(object, "table", None)
    return table is None or not is_paycore_table(getattr(table, "name", None))


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Alembic's ``include_name`` hook, the cheaper filter (applied before reflection):
    paycore's tables are never even read. Use it with or instead of ``include_object``."""
    return type_ != "table" or not is_paycore_table(name)


__all__ = ["PAYCORE_TABLES", "PREFIX", "include_name", "include_object", "is_paycore_table"]
