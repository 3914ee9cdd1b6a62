"""Typed errors that carry their HTTP status and the one-line text docs/interface.md §Errors gives.

The core raises these; adapters only copy ``status`` and ``text`` into a response, so every
framework answers a given mistake with the same status and the same words.
"""

from __future__ import annotations

from .ops.redaction import redact


class PaycoreError(Exception):
    """Base of every error the core raises on purpose."""

    status: int = 400

    def __init__(self, text: str) -> None:
        # One line, always: a body is never a stack trace or a multi-line dump. Redacted,
        # because some texts quote what a library said (a node's URL with its API key).
        self.text = redact(" ".join(str(text).split()))
        super().__init__(self.text)


class InvalidInput(PaycoreError):
    """Bad request data. Text: ``invalid request: <field>: <reason>``."""

    status = 400

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"invalid request: {field}: {reason}")


class NoAddressDeriver(InvalidInput):
    """No chain backend derives deposit addresses on a chain: the invoice (or link) needs
    one, and the text says which settings make one (docs/chains.md)."""

    def __init__(self, field: str, chain_id: int, reason: str) -> None:
        super().__init__(
            field,
            f"{reason}: no chain backend derives deposit addresses on {chain_id} "
            f"(give chain {chain_id} a factory and an rpc_url in PAYCORE_CHAINS, docs/chains.md)",
        )


class AuthError(PaycoreError):
    """A session or wallet signature that cannot be honoured. Text: ``session signature: ...``."""

    status = 401

    def __init__(self, reason: str, *, prefix: str = "session signature") -> None:
        self.reason = reason
        super().__init__(f"{prefix}: {reason}")


class Forbidden(PaycoreError):
    """An authenticated caller asked for another owner's data."""

    status = 403

    def __init__(self, reason: str) -> None:
        super().__init__(f"forbidden: {reason}")


class NotFound(PaycoreError):
    status = 404


class InvoiceNotFound(NotFound):
    def __init__(self, guid: str) -> None:
        self.guid = guid
        super().__init__(f"invoice {guid} not found")


class Conflict(PaycoreError):
    """The interface's 409 body is the bare word ``Conflict`` (docs/interface.md §Errors)."""

    status = 409

    def __init__(self, text: str = "Conflict") -> None:
        super().__init__(text)


class Gone(PaycoreError):
    status = 410


class TooManyRequests(PaycoreError):
    """A client over its rate limit (``paycore.ops.limits``): 429 with ``Retry-After``."""

    status = 429

    def __init__(self, reason: str, retry_after: int) -> None:
        self.headers = {"retry-after": str(retry_after)}
        super().__init__(f"too many requests: {reason}, retry in {retry_after} s")


class PayloadTooLarge(PaycoreError):
    status = 413

    def __init__(self, limit: int) -> None:
        super().__init__(f"payload too large: the limit is {limit} bytes")


class StorageUnavailable(PaycoreError):
    """Storage cannot be reached or answer right now (the database is down, restarting,
    out of connections): nothing about the request is wrong, so it is worth retrying.

    Storage plugins raise it in place of their driver's connection errors, which keeps the
    core free of any database library; the HTTP layer answers 503 with ``Retry-After``, and
    the worker's loops back off until storage answers again. ``kind`` names the failure
    for rate-limited logging (one line per kind and interval); ``detail`` is the driver's
    first line, redacted, for that log line and never for a response body.
    """

    status = 503
    TEXT = "storage unavailable, retry later"

    def __init__(self, kind: str, detail: str = "") -> None:
        self.kind = kind
        self.detail = redact(" ".join(str(detail).split()))[:300]
        super().__init__(self.TEXT)


class IllegalTransition(Exception):
    """The invoice state machine was asked for a move its table does not have.

    Not a PaycoreError: it signals a bug in the caller, never bad user input, and the
    invoice it was asked about is left exactly as it was.
    """


class PriceUnavailable(Exception):
    """No usable price for a token; the deposit waits rather than being valued wrongly."""
