"""Handler of the accounting export (docs/interface.md §GET /export): a streamed answer."""

from __future__ import annotations

import itertools

from ..accounting.export import FORMATS, RECORDS
from .http import Response
from .requests import ExportQuery
from .routing import Call


def export(call: Call) -> Response:
    """Checks the query and reads the first batch before answering, so bad input is a 400
    and a storage outage a 503; the rest is read and sent batch by batch as the client
    takes it (``Response.chunks``)."""
    gw = call.gateway
    query = call.read(ExportQuery)
    owner = call.owner_scope(query.owner)
    fmt = query.format or "csv"
    start = query.start or 0
    chunks = gw.accounting.export(
        owner, start=start, end=query.end, fmt=fmt, records=query.records or RECORDS
    )
    first = next(chunks, b"")
    end = "" if query.end is None else str(query.end)
    name = f"paycore-{owner}-{start}-{end or 'now'}.{fmt}"
    headers = {
        "content-disposition": f'attachment; filename="{name}"',
        "cache-control": "no-store",
        "x-content-type-options": "nosniff",
    }
    return Response(200, b"", FORMATS[fmt], headers, chunks=itertools.chain([first], chunks))
