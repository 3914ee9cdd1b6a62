"""Reading a payout batch's recipients -- JSON rows or a CSV upload -- into checked rows.

Every row is checked before anything is built or stored, and every bad row is reported, not
only the first: a merchant pasting 500 lines fixes them in one round. The answer is one 400
whose text has a line per bad row (up to ``MAX_SHOWN``), each starting with the row's line
number -- the CSV's own line (the header is line 1), or a JSON row's position from 1.

What "good" means is decided here once: the address normalised for the chain, the token
named by address, ``{chainId}:{address}`` or symbol and known to the chain's configuration
or the registry (its decimals must be known, since the amount becomes base units), the
amount a positive Decimal with no more places than the token has, the reference short text.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from decimal import Decimal

import attrs

from ..config import Settings
from ..domain.aliases import resolve_token
from ..domain.money import parse_amount, to_base_units
from ..domain.registry import TokenMeta, by_symbol, describe, symbol_key
from ..domain.tokens import NATIVE, normalize_address, normalize_token_address
from ..errors import InvalidInput
from ..ops.redaction import redact

#: Rows one batch may hold; the request body's size cap bites first for long references.
MAX_ROWS = 2000
#: Bad rows named in one answer; the count of the rest follows.
MAX_SHOWN = 20
MAX_REFERENCE = 128
COLUMNS = ("address", "token", "amount", "reference")


@attrs.frozen
class PayoutRow:
    """One checked recipient: normalised address and token, the amount and its base units."""

    line: int
    to: str
    token: str
    amount: Decimal
    value: int
    reference: str


class BadRows(InvalidInput):
    """Some rows are wrong. Unlike every other error, the text has one line per bad row
    (``line 7: amount: must not be negative``) after a first line that counts them: the
    merchant needs all of them, and each line is still one short sentence."""

    def __init__(self, problems: list[tuple[int, str]]) -> None:
        super().__init__("rows", f"{len(problems)} bad row(s)")
        shown = [f"line {line}: {redact(' '.join(text.split()))}" for line, text in problems]
        rest = len(shown) - MAX_SHOWN
        lines = [self.text, *shown[:MAX_SHOWN]]
        if rest > 0:
            lines.append(f"... and {rest} more")
        self.problems = problems
        self.text = "\n".join(lines)
        self.args = (self.text,)


def _token(
    settings: Settings, chain_id: int, raw: object, read: Mapping[str, TokenMeta]
) -> TokenMeta:
    if not isinstance(raw, str) or not raw.strip():
        raise InvalidInput("token", "is required: a token address, symbol or {chainId}:{address}")
    text = raw.strip()
    if ":" in text:
        parsed = resolve_token(settings, text, "token", chain_id=chain_id)
        if parsed.chain_id != chain_id:
            raise InvalidInput("token", f"is on chain {parsed.chain_id}, not {chain_id}")
        address = parsed.address
    elif text.isalnum() and len(text) <= 12 and not text.startswith(("0x", "0X")):
        meta = by_symbol(settings, chain_id, text)
        if meta is None:
            wanted = symbol_key(text)
            meta = next((m for m in read.values() if symbol_key(m.symbol) == wanted), None)
        if meta is None:
            raise InvalidInput("token", f"no token {text!r} known on chain {chain_id}")
        return meta
    else:
        address = normalize_token_address(chain_id, text, "token")
    meta = describe(settings, chain_id, address)
    if meta is None:
        meta = read.get(address)
    if meta is None:
        raise InvalidInput(
            "token",
            f"{address} is not a configured token of chain {chain_id}: "
            "add it to the chain's tokens so its decimals are known",
        )
    return meta


def check_row(
    settings: Settings,
    chain_id: int,
    line: int,
    row: Mapping[str, object],
    read: Mapping[str, TokenMeta] | None = None,
) -> PayoutRow:
    """One row, or ``InvalidInput`` naming the first thing wrong with it. ``read``: the
    facts (decimals, symbol) of configured tokens that only the chain knows, read by the
    caller."""
    unknown = sorted(set(row) - set(COLUMNS) - {"to"})
    if unknown:
        raise InvalidInput(
            str(unknown[0])[:40], "is not a column (address, token, amount, reference)"
        )
    raw_to = row.get("address", row.get("to"))
    if raw_to is None or raw_to == "":
        raise InvalidInput("address", "is required")
    to = normalize_address(chain_id, raw_to, "address")
    if to == NATIVE:
        raise InvalidInput("address", "the zero address cannot be paid")
    meta = _token(settings, chain_id, row.get("token"), read or {})
    amount = parse_amount(row.get("amount"), "amount", allow_zero=False)
    value = to_base_units(amount, meta.decimals, "amount")
    if value >= 1 << 256:
        raise InvalidInput("amount", "is too large")
    reference = row.get("reference", "")
    if reference is None:
        reference = ""
    if not isinstance(reference, str):
        raise InvalidInput("reference", "must be a string")
    if len(reference) > MAX_REFERENCE or any(ord(c) < 32 for c in reference):
        raise InvalidInput("reference", f"at most {MAX_REFERENCE} printable characters")
    return PayoutRow(line, to, meta.address, amount, value, reference)


def check_rows(
    settings: Settings,
    chain_id: int,
    rows: Iterable[tuple[int, Mapping[str, object]]],
    read: Mapping[str, TokenMeta] | None = None,
) -> list[PayoutRow]:
    """Every row checked; ``BadRows`` listing each bad one when any is."""
    good: list[PayoutRow] = []
    problems: list[tuple[int, str]] = []
    for line, row in rows:
        try:
            good.append(check_row(settings, chain_id, line, row, read))
        except InvalidInput as exc:
            problems.append((line, f"{exc.field}: {exc.reason}"))
    if problems:
        raise BadRows(problems)
    if not good:
        raise InvalidInput("rows", "no recipients: give at least one row")
    if len(good) > MAX_ROWS:
        raise InvalidInput("rows", f"at most {MAX_ROWS} rows in one batch")
    return good


def unread_tokens(settings: Settings, chain_id: int) -> list[str]:
    """The chain's configured tokens whose decimals only the chain can tell (configured by
    address alone): the ones a caller reads before ``check_rows``. Only configured tokens,
    so a row naming any other address costs no request to the node."""
    config = settings.chains.get(chain_id)
    if config is None:
        return []
    return [t for t in config.tokens if describe(settings, chain_id, t) is None]


def json_rows(raw: object) -> list[tuple[int, Mapping[str, object]]]:
    """A JSON array of row objects, numbered from 1."""
    if not isinstance(raw, (list, tuple)):
        raise InvalidInput("rows", "must be an array of objects")
    numbered: list[tuple[int, Mapping[str, object]]] = []
    problems: list[tuple[int, str]] = []
    for n, row in enumerate(raw, start=1):
        if isinstance(row, Mapping):
            numbered.append((n, row))
        else:
            problems.append((n, "rows: each row must be an object"))
    if problems:
        raise BadRows(problems)
    return numbered


def csv_rows(text: str) -> list[tuple[int, Mapping[str, object]]]:
    """A CSV upload: a header naming the columns (address, token, amount and optionally
    reference, in any order), then one recipient per line; blank lines are skipped. Each row
    keeps the line it started on."""
    if len(text.splitlines()) > MAX_ROWS + 1:
        raise InvalidInput("csv", f"at most {MAX_ROWS} rows in one batch")
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff")))
    try:
        header = next(reader)
    except (StopIteration, csv.Error):
        raise InvalidInput("csv", "is empty: the first line names the columns") from None
    names = [h.strip().lower() for h in header]
    missing = [c for c in ("address", "token", "amount") if c not in names]
    if missing or len(set(names)) != len(names):
        raise InvalidInput(
            "csv", "line 1 must name the columns address, token, amount (and reference), once each"
        )
    numbered: list[tuple[int, Mapping[str, object]]] = []
    problems: list[tuple[int, str]] = []
    line = reader.line_num
    while True:
        start = line + 1
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            problems.append((start, f"csv: {exc}"))
            break
        line = reader.line_num
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(names):
            problems.append((start, f"csv: {len(cells)} cells where the header has {len(names)}"))
            continue
        numbered.append((start, {n: c.strip() for n, c in zip(names, cells, strict=True)}))
    if problems:
        raise BadRows(problems)
    return numbered
