"""Plain request and response records: all an adapter has to build and send back.

Adapters copy the framework's request into a :class:`Request` and the :class:`Response` back
into the framework's; nothing else about HTTP is theirs to decide.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs

import attrs

from ..errors import InvalidInput

#: Request bodies above this are refused with 413 before they are read whole.
MAX_BODY = 64 * 1024


def _lower(headers: Mapping[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


@attrs.frozen
class Request:
    method: str
    path: str  # below the mount prefix, starting with "/"
    query_string: str = ""
    headers: Mapping[str, str] = attrs.field(factory=dict, converter=_lower)
    body: bytes = b""
    #: The URI as the client sent it (prefix + path + "?" + query): what a GET signature covers.
    raw_uri: str = ""

    @property
    def uri(self) -> str:
        if self.raw_uri:
            return self.raw_uri
        return self.path + ("?" + self.query_string if self.query_string else "")

    def query(self, name: str) -> str | None:
        values = parse_qs(self.query_string, keep_blank_values=True).get(name)
        return values[-1] if values else None

    def json(self) -> dict[str, Any]:
        """The body as a JSON object; GET query parameters stand in when the body is empty."""
        if not self.body:
            return {k: v[-1] for k, v in parse_qs(self.query_string).items()}
        try:
            data = json.loads(self.body)
        except (ValueError, UnicodeDecodeError):
            raise InvalidInput("body", "not valid JSON") from None
        if not isinstance(data, dict):
            raise InvalidInput("body", "must be a JSON object")
        return data


@attrs.frozen
class Response:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: Mapping[str, str] = attrs.field(factory=dict)


def json_response(
    data: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
    return Response(status, body, "application/json", dict(headers or {}))


def text_response(text: str, status: int) -> Response:
    return Response(status, text.encode(), "text/plain; charset=utf-8")
