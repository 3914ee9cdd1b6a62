"""Secrets kept out of every log line, error text, banner and repr: :func:`redact`.

paycore holds credentials inside URLs (a database or Redis password, an RPC provider's API
key in the path or the query) and in plain fields (TronGrid and CoinGecko keys, the SMTP
password, webhook signing secrets). A secret printed once lives on in log archives, CI
output and bug reports, so every text that leaves the process through a log line, a start-up
banner, an error body or a repr goes through the one function here.

It casts two nets, because neither alone is enough:

- Patterns, which need no configuration: the password of any ``scheme://user:password@``
  URL, query values named like a key, token, secret or password, URL path segments that
  look like API keys (long runs mixing letters and digits, as Infura, Alchemy, QuickNode or
  GetBlock URLs carry), ``whsec_`` webhook secrets and libpq's ``password=`` pairs.
- Known values: every secret the configuration holds (``Settings.secret_values``), which
  each Gateway registers with :func:`remember_secrets`. This catches a secret that a
  library quotes without its URL around it, such as requests' "Max retries exceeded with
  url: /v3/<key>".

Nothing here imports the rest of paycore, so errors and records can use it freely.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import traceback
from collections.abc import Iterable
from types import TracebackType
from urllib.parse import unquote

#: What a secret is replaced with.
MASK = "***"
#: Known values shorter than this are not replaced on their own (they would hit ordinary
#: words); inside a URL the patterns still hide them.
MIN_KNOWN_SECRET = 6
#: A path segment or query value at least this long, made of key characters and mixing
#: letters with digits, is taken for an API key.
MIN_KEY_LENGTH = 20

_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>(){}|\\^`]+")
_KEYLIKE = re.compile(r"[A-Za-z0-9_\-]+")
_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")  # an EVM address is public, not a key
_WHSEC = re.compile(r"whsec_[A-Za-z0-9+/=_\-]+")
#: ``password=...`` in libpq connection strings and similar ``key=value`` texts.
_PAIR = re.compile(
    r"(?i)\b(password|passwd|pwd|secret|api[_\-]?key|access[_\-]?token|auth[_\-]?token)"
    r"(\s*=\s*)('[^']*'|\"[^\"]*\"|[^\s&;,'\"]+)"
)
#: Query parameter names whose value is a credential (compared without - and _).
_SECRET_NAMES = ("key", "token", "secret", "password", "passwd", "pwd", "auth", "signature")

_known: frozenset[str] = frozenset()
_known_lock = threading.Lock()


def remember_secrets(values: Iterable[str | None]) -> None:
    """Add configured secret values to those :func:`redact` replaces wherever they occur.

    Process-wide on purpose: a log line does not know which Gateway's settings it came from.
    """
    global _known
    fresh = {v for v in values if v and len(v) >= MIN_KNOWN_SECRET}
    with _known_lock:
        _known = _known | fresh


def looks_like_key(text: str) -> bool:
    """A long token of key characters that mixes letters and digits, and is not an address."""
    return (
        len(text) >= MIN_KEY_LENGTH
        and _KEYLIKE.fullmatch(text) is not None
        and any(c.isdigit() for c in text)
        and any(c.isalpha() for c in text)
        and _ADDRESS.fullmatch(text) is None
    )


def _secret_name(name: str) -> bool:
    plain = unquote(name).lower().replace("-", "").replace("_", "")
    return any(word in plain for word in _SECRET_NAMES)


def _split_url(url: str) -> tuple[str, str, str, str, str]:
    """(scheme://, userinfo, host, path, query-and-fragment); userinfo without its ``@``."""
    scheme_end = url.index("://") + 3
    scheme, rest = url[:scheme_end], url[scheme_end:]
    cut = len(rest)
    for mark in "/?#":
        found = rest.find(mark)
        if found != -1:
            cut = min(cut, found)
    authority, tail = rest[:cut], rest[cut:]
    userinfo, _, host = authority.rpartition("@")
    path_end = len(tail)
    for mark in "?#":
        found = tail.find(mark)
        if found != -1:
            path_end = min(path_end, found)
    return scheme, userinfo, host, tail[:path_end], tail[path_end:]


def _redact_url(url: str, known: frozenset[str]) -> str:
    """``url`` with its credentials masked, by its structure: the password, a key-like user,
    path segment or query value, a query value named like a credential, and a known secret
    standing as a whole path segment or query value. A URL that carries its credential as a
    password (a database's, Redis') has a resource name for a path (the database), which
    stays readable even when it happens to spell a known secret; host and user always do."""
    scheme, userinfo, host, path, rest = _split_url(url)
    has_password = False
    if userinfo:
        user, colon, _password = userinfo.partition(":")
        if colon:
            userinfo = f"{user}:{MASK}"
            has_password = True
        elif looks_like_key(unquote(user)):  # https://<key>@host
            userinfo = MASK
        userinfo += "@"

    def secret(part: str) -> bool:
        return looks_like_key(unquote(part)) or part in known or unquote(part) in known

    path = "/".join(
        MASK if looks_like_key(unquote(s)) or (not has_password and secret(s)) else s
        for s in path.split("/")
    )
    query, hash_mark, fragment = rest.partition("#")
    if query.startswith("?"):
        pairs = []
        for pair in query[1:].split("&"):
            name, equals, value = pair.partition("=")
            if equals and value and (_secret_name(name) or secret(value)):
                value = MASK
            pairs.append(name + equals + value)
        query = "?" + "&".join(pairs)
    return scheme + userinfo + host + path + query + hash_mark + fragment


def _known_out(text: str, known: frozenset[str]) -> str:
    """``text`` with each known secret replaced where it stands as a word of its own: a
    password ``paycore`` is masked in ``auth paycore failed`` and ``paycore.api``, but a
    database ``paycore_prod`` or a name ``mypaycore`` keeps its letters."""
    for found in sorted((s for s in known if s in text), key=len, reverse=True):
        text = re.sub(rf"(?<!\w){re.escape(found)}(?!\w)", MASK, text)
    return text


def redact(text: str) -> str:
    """``text`` with every secret it may hold replaced by ``***``. Idempotent; cheap on
    text with nothing to hide (no ``://``, no known secret). URLs are masked by their
    structure (:func:`_redact_url`), the text around them by the known values."""
    known = _known
    if "://" in text:
        pieces: list[str] = []
        last = 0
        for match in _URL.finditer(text):
            pieces.append(_known_out(text[last : match.start()], known))
            pieces.append(_redact_url(match.group(0), known))
            last = match.end()
        pieces.append(_known_out(text[last:], known))
        text = "".join(pieces)
    elif known:
        text = _known_out(text, known)
    if "whsec_" in text:
        text = _WHSEC.sub("whsec_" + MASK, text)
    if "=" in text:
        text = _PAIR.sub(lambda m: m.group(1) + m.group(2) + MASK, text)
    return text


def redacted_repr(value: object) -> str:
    """``repr(value)``, redacted: the ``repr=`` of attrs fields that hold URLs."""
    return redact(repr(value))


def url_secrets(url: str | None) -> set[str]:
    """The secret parts of ``url`` (password, key-like path segments, credential query
    values), raw and percent-decoded, for :func:`remember_secrets`."""
    if not url or "://" not in url:
        return set()
    _scheme, userinfo, _host, path, rest = _split_url(url)
    found: set[str] = set()
    user, colon, password = userinfo.partition(":")
    if colon and password:
        found.add(password)
    elif looks_like_key(unquote(user)):
        found.add(user)
    found.update(s for s in path.split("/") if looks_like_key(unquote(s)))
    query = rest.partition("#")[0]
    if query.startswith("?"):
        for pair in query[1:].split("&"):
            name, equals, value = pair.partition("=")
            if equals and value and (_secret_name(name) or looks_like_key(unquote(value))):
                found.add(value)
    return found | {unquote(s) for s in found}


# -- the command-line processes' logging ------------------------------------------------------

LOG_FORMAT = "%(asctime)s %(name)s %(levelname)s %(message)s"


class RedactingFormatter(logging.Formatter):
    """Formats as usual, tracebacks included, then redacts the whole line."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class RedactedFormatter(logging.Formatter):
    """Another formatter's lines, redacted: for the handlers a server sets up itself
    (gunicorn's), whose format is kept."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        super().__init__()
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        return redact(self.inner.format(record))


def configure_logging(level: str | int = "INFO") -> None:
    """Logging for ``paycore serve`` and ``paycore worker``: one stderr handler on the root
    logger, every line redacted, and uncaught exceptions (main or other threads) printed
    through :func:`redact` too, since their tracebacks quote URLs and driver messages."""
    logging.basicConfig(level=level, format=LOG_FORMAT, force=True)
    for handler in logging.getLogger().handlers:
        handler.setFormatter(RedactingFormatter(LOG_FORMAT))
    # httpx logs every request at INFO: a watcher's JSON-RPC calls would fill the log.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, logging.getLogger().level))
    install_excepthooks()


def install_excepthooks() -> None:
    """Print uncaught exceptions, of the main thread and of others, redacted."""
    sys.excepthook = _print_redacted
    threading.excepthook = _print_thread_redacted


def _print_redacted(
    kind: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    sys.stderr.write(redact("".join(traceback.format_exception(kind, exc, tb))))


def _print_thread_redacted(args: threading.ExceptHookArgs) -> None:
    if args.exc_value is not None:
        _print_redacted(args.exc_type, args.exc_value, args.exc_traceback)
