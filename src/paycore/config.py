"""Settings: one frozen record, overridable by ``PAYCORE_*`` variables (docs/interface.md §Limits).

Everything an operator can turn lives here so that the configuration reference in README.md
has a single source, and so that a test can build a gateway with exactly the knobs it needs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit

import attrs

from .domain.registry import MAX_SYMBOL, TokenMeta, registry_token, token_entry
from .domain.tokens import (
    TRON_CHAIN_IDS,
    ChainKind,
    address_text,
    chain_kind,
    normalize_tron,
    to_checksum,
    tron_from_hex,
)
from .errors import InvalidInput
from .ops.redaction import redacted_repr, url_secrets
from .prices import options as _price_opts

#: Chains where ``faucet_key`` may be set: local dev chains, whose coin is worth nothing.
FAUCET_CHAIN_IDS = frozenset({1337, 31337})


def _contract_address(raw: object, field: str) -> str:
    """A contract address from config: Tron base58 (``T...``) or ``41...`` hex stays Tron
    (base58), anything else is an EVM address, checksummed; a typo fails at startup. A
    chain's kind is checked (and a 0x address on a Tron chain converted) after all fields
    are set, in ``ChainConfig.__attrs_post_init__``."""
    text = address_text(raw, field)
    if text.startswith("T") or (len(text) == 42 and text[:2] == "41"):
        return normalize_tron(text, field)
    return to_checksum(text, field)


def _optional_address(raw: str | None) -> str | None:
    return None if raw in (None, "") else _contract_address(raw, "factory")


def _token_addresses(raw: Iterable[object] | str) -> tuple[Any, ...]:
    """Token entries from a sequence, or from a comma-separated string (an environment
    variable), where spaces after a comma are list layout, not address text. An address
    itself is taken as written: whitespace in a sequence item is refused. A registry symbol
    (``"USDT"``) or an entry with symbol and decimals is resolved once the chain id is known,
    in ``ChainConfig.__attrs_post_init__``."""
    items = [i.strip(" ") for i in raw.split(",")] if isinstance(raw, str) else raw
    return tuple(
        _contract_address(i, "tokens") if _is_address_entry(i) else i for i in items if i != ""
    )


def _is_address_entry(entry: object) -> bool:
    """A plain address in ``tokens`` rather than a symbol: symbols are short and never 0x."""
    return isinstance(entry, str) and (len(entry) > MAX_SYMBOL or entry.startswith("0x"))


def _urls(raw: Iterable[str] | str | None) -> tuple[str, ...]:
    """URLs from a sequence or a comma-separated string (an environment variable)."""
    if raw is None:
        return ()
    items = raw.split(",") if isinstance(raw, str) else raw
    return tuple(dict.fromkeys(str(i).strip() for i in items if str(i).strip()))


#: The ways ``ChainConfig.internal_transfers`` can read call traces.
TRACE_MODES = ("off", "debug", "trace")


def _trace_mode(raw: str | bool | None) -> str:
    if raw in (None, False, ""):
        return "off"
    mode = str(raw).strip().lower()
    if mode not in TRACE_MODES:
        raise InvalidInput("internal_transfers", f"must be one of {', '.join(TRACE_MODES)}")
    return mode


def _staking_contract(raw: str | None) -> str | None:
    return None if raw in (None, "") else to_checksum(raw, "staking_contract")


def _optional_int(raw: int | str | None) -> int | None:
    return None if raw in (None, "") else int(raw)


def _optional_rate(raw: float | str | None) -> float | None:
    """Requests per second: a positive number, or unset (None, "" or 0: no limit)."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    value = float(raw)
    if value < 0 or value != value:
        raise InvalidInput("rate_limit", "must be a positive number of requests per second")
    return value or None


def _optional_text(raw: str | None) -> str | None:
    """``PAYCORE_REDIS_URL=`` (set but empty) means unset, as leaving it out does."""
    return (raw.strip() or None) if isinstance(raw, str) else raw


def _optional_base(raw: str | None) -> str | None:
    """A base URL that paths are appended to: no trailing slash; empty means unset."""
    text = _optional_text(raw)
    return text.rstrip("/") if text else None


def _absolute_url(_instance: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """An absolute http(s) address, so a typo fails at startup and not in a buyer's link."""
    if value is None:
        return
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise InvalidInput(attribute.name, "must be an absolute http(s) address")


def _flag(raw: bool | str) -> bool:
    """``PAYCORE_WEBHOOK_ALLOW_PRIVATE=0`` must mean off, which ``bool("0")`` would not."""
    if isinstance(raw, str):
        return raw.strip().lower() in ("1", "true", "yes", "on")
    return bool(raw)


def _decimal(raw: object) -> Decimal:
    """A Decimal from a number or an environment string, exact (``str`` first, never float)."""
    return Decimal(str(raw))


def _at_least_one(raw: int | str) -> int:
    """A count that must be at least 1 (a cap of 0 would refuse every socket)."""
    value = int(raw)
    if value < 1:
        raise InvalidInput("settings", f"expected a whole number of at least 1, got {raw!r}")
    return value


def _queue_size(raw: int | str) -> int:
    value = int(raw)
    if value < 1:
        raise InvalidInput("ws_queue_size", "must be at least 1")
    return value


@attrs.frozen
class ChainConfig:
    """One chain paycore knows: its id, how deep a deposit must be, and its node.

    The defaults (``Settings.chains``) name the common EVM chains, anvil and the Tron
    networks without a node; a chain gets a backend (deposit addresses, a watcher, the wallet
    helpers) once it has an ``rpc_url`` and a ``factory``. Addresses are checked and
    normalised when the record is built, so a typo fails at startup.
    """

    #: The id the chain's node reports (Tron: docs/interface.md §Conventions).
    chain_id: int
    #: A label for logs and the CLI.
    name: str
    #: Blocks a deposit must be buried under before it is attributed.
    confirmations: int = 1
    #: The node's JSON-RPC URL (TronGrid's HTTP API for Tron); unset, no backend. Often
    #: carries an API key (``https://host/v3/<key>``): shown redacted in the repr.
    rpc_url: str | None = attrs.field(default=None, repr=redacted_repr)
    #: Symbol and decimals of the native coin (ETH and 18; TRX and 6).
    native_symbol: str = "ETH"
    native_decimals: int = 18
    # -- EVM backend (paycore.chains.evm): on for a chain with both rpc_url and factory -------
    #: The chain's ``PaycoreFactory``: every wallet and deposit address derives from it.
    factory: str | None = attrs.field(default=None, converter=_optional_address)
    #: The chain's ``PaycoreBatchPay`` (docs/payouts.md): batch payouts are built against it;
    #: unset, POST /payouts is refused on this chain.
    batch_pay: str | None = attrs.field(default=None, converter=_optional_address)
    #: ERC20 contracts the watcher follows and /getBalances lists, besides the priced ones
    #: (a payment in a token nobody accepts is still recorded when its contract is here).
    #: An entry is an address (symbol and decimals read from the chain, or from the
    #: registry when it lists the address), a registry symbol (``"USDT"``), or
    #: ``{"address": ..., "symbol": ..., "decimals": ...}``; the record keeps the addresses.
    tokens: tuple[str, ...] = attrs.field(default=(), converter=_token_addresses)
    #: Symbol and decimals by token address (``paycore.domain.registry.TokenMeta``): those of
    #: the ``tokens`` entries that carry them or that the registry lists are added to it.
    #: Describes a token for display and valuation; only ``tokens`` are watched.
    token_info: Mapping[str, TokenMeta] = attrs.field(
        factory=dict, converter=dict, repr=False, hash=False
    )
    #: Dev chains only (FAUCET_CHAIN_IDS): the funded key /getFaucet pays from, 0x hex.
    faucet_key: str | None = attrs.field(default=None, repr=False)
    #: Native coin, in whole units, one /getFaucet call sends.
    faucet_amount: Decimal = attrs.field(default=Decimal(1), converter=_decimal)
    #: Blocks per eth_getLogs range: bigger ranges mean fewer round trips, until the node's
    #: own response limits (often 10,000 logs or 2,000 blocks on hosted RPC) bite.
    block_batch: int = attrs.field(default=500, converter=int)
    #: JSON-RPC calls sent in one HTTP batch (balances, full blocks, receipts).
    rpc_batch: int = attrs.field(default=100, converter=int)
    #: Seconds a watcher sleeps when it has caught up with the confirmed head.
    poll_interval: float = attrs.field(default=2.0, converter=float)
    #: First block a watcher with no cursor scans; None starts before the oldest watched
    #: invoice was created (found by block timestamp), or at the confirmed head when no
    #: invoice is watched, since then no older block can pay one (docs/chains.md).
    start_block: int | None = attrs.field(default=None, converter=_optional_int)
    #: Seconds after its deadline an invoice's address is still watched, so late payments
    #: are recorded (docs/interface.md §Invoice lifecycle) without watching every address.
    watch_grace: int = attrs.field(default=7 * 24 * 3600, converter=int)
    #: Seconds one watcher's claim on this chain lasts unless renewed; a killed watcher's
    #: chain is picked up by another process after at most this long.
    watcher_lease: float = attrs.field(default=30.0, converter=float)
    #: Blocks re-scanned when the cursor's block turns out replaced (a reorg deeper than
    #: ``confirmations``): attribution is idempotent, so re-scanning costs only time.
    reorg_rewind: int = attrs.field(default=64, converter=int)
    #: Blocks below a replaced cursor block within which recorded deposits are re-checked:
    #: each one whose block was replaced too is taken back out of its invoice. Checked
    #: newest first and only until the first intact block, so the cost is the blocks a
    #: reorg replaced, not this depth.
    reorg_depth: int = attrs.field(default=1000, converter=int)
    #: Scan full blocks for native-coin transfers (off: tokens only, far fewer RPC bytes).
    scan_native: bool = attrs.field(default=True, converter=_flag)
    #: Report transfers mined but not yet ``confirmations`` deep as the invoice's provisional
    #: ``detected`` list ("payment detected, confirming"): each pass also reads the
    #: unconfirmed head blocks (docs/chains.md, Detection). Off: no read, the list stays empty.
    detect_unconfirmed: bool = attrs.field(default=True, converter=_flag)
    # -- EVM node access (docs/chains.md) ------------------------------------------------------
    #: More JSON-RPC URLs, tried in order after ``rpc_url`` when it fails or rate-limits
    #: (``rpc_url`` may be left unset: the first of these stands in). EVM only.
    rpc_urls: tuple[str, ...] = attrs.field(default=(), converter=_urls, repr=redacted_repr)
    #: Seconds one HTTP request to a node may take before the next endpoint is tried.
    rpc_timeout: float = attrs.field(default=30.0, converter=float)
    #: Seconds one call may spend waiting for a resting endpoint (``Retry-After``, backoff)
    #: before it fails; the watcher's next pass waits out the rest.
    rpc_max_wait: float = attrs.field(default=3.0, converter=float)
    #: Native coin sent by contracts (internal transfers), found in call traces: ``off``;
    #: ``debug`` (``debug_traceBlockByHash`` with the callTracer: geth, erigon, reth, anvil);
    #: ``trace`` (``trace_block``: erigon, nethermind, reth, anvil). Needs a node that traces.
    internal_transfers: str = attrs.field(default="off", converter=_trace_mode)
    # -- Tron backend (paycore.chains.tron): on for a Tron chain with rpc_url and factory ------
    #: TronGrid's ``TRON-PRO-API-KEY`` header, sent with every request to ``rpc_url`` when set
    #: (TronGrid throttles keyless clients hard; a node of your own needs none).
    api_key: str | None = attrs.field(default=None, repr=False, converter=_optional_text)
    #: The most SUN a TVM contract call built by /initWallet or /initWithdraw may burn for
    #: energy (the transaction's ``fee_limit``). A cap, not a price: only what the call uses
    #: is burned; a wallet deployment needs over a million energy.
    fee_limit: int = attrs.field(default=1_000_000_000, converter=int)
    #: Requests per second paycore sends to ``rpc_url`` from one process (the watcher and the
    #: HTTP helpers together); None: no limit (a node of your own). Keep it under the API
    #: key's quota: a refusal for rate costs the node's penalty window (docs/tron.md).
    rate_limit: float | None = attrs.field(default=None, converter=_optional_rate)
    #: The size in bytes the watcher aims at for one answer of the node: blocks per request
    #: shrink and grow to stay near it (docs/tron.md, "Providers and their limits").
    response_bytes: int = attrs.field(default=4_000_000, converter=int)
    # -- the checkout page ----------------------------------------------------------------------
    #: A block explorer's page of one transaction, ``{tx}`` standing for its hash
    #: (``https://etherscan.io/tx/{tx}``); unset, the built-in one of a well-known chain
    #: (EXPLORERS), else the page shows hashes without links.
    explorer_url: str | None = attrs.field(default=None, converter=_optional_text)
    #: The same explorer's page of an address, ``{address}`` standing for it.
    explorer_address_url: str | None = attrs.field(default=None, converter=_optional_text)

    def __attrs_post_init__(self) -> None:
        self._addresses_fit_kind()
        _check_template(self.explorer_url, "explorer_url", "{tx}")
        _check_template(self.explorer_address_url, "explorer_address_url", "{address}")
        if self.rpc_url is None and self.rpc_urls:
            object.__setattr__(self, "rpc_url", self.rpc_urls[0])
        if self.rpc_timeout <= 0 or self.rpc_max_wait < 0:
            raise InvalidInput(
                "rpc_timeout", "rpc_timeout must be positive, rpc_max_wait not negative"
            )
        self._describe_tokens()
        if self.faucet_key and self.chain_id not in FAUCET_CHAIN_IDS:
            raise InvalidInput("faucet_key", f"only allowed on chains {sorted(FAUCET_CHAIN_IDS)}")
        if self.block_batch < 1 or self.rpc_batch < 1:
            raise InvalidInput("block_batch", "block_batch and rpc_batch must be at least 1")
        if self.confirmations < 0 or self.reorg_rewind < 0:
            raise InvalidInput("confirmations", "must not be negative")
        if self.reorg_depth < 0:
            raise InvalidInput("reorg_depth", "must not be negative")
        if self.fee_limit < 0:
            raise InvalidInput("fee_limit", "must not be negative")
        if self.response_bytes < 1000:
            raise InvalidInput("response_bytes", "must be at least 1000")

    def _addresses_fit_kind(self) -> None:
        """Tron chains keep base58 contract addresses (a 0x one is converted, as TVM tools
        print them); an EVM chain refuses a Tron address instead of misreading it."""
        if self.kind is ChainKind.TRON:
            if self.factory is not None and self.factory.startswith("0x"):
                object.__setattr__(self, "factory", tron_from_hex(self.factory, "factory"))
            tokens = tuple(
                tron_from_hex(t, "tokens") if _is_address_entry(t) and t.startswith("0x") else t
                for t in self.tokens
            )
            object.__setattr__(self, "tokens", tokens)
            return
        addresses = [t for t in self.tokens if _is_address_entry(t)]
        for name, value in (("factory", self.factory), *(("tokens", t) for t in addresses)):
            if value is not None and not value.startswith("0x"):
                raise InvalidInput(name, f"a Tron address on EVM chain {self.chain_id}")

    def _describe_tokens(self) -> None:
        """``tokens`` as addresses, and ``token_info`` for those whose symbol
        and decimals are known without asking the chain (given in the entry, or listed in
        the registry); the rest are read from the chain by the backend when first needed."""
        addresses: list[str] = []
        info: dict[str, TokenMeta] = {}
        for key, given in self.token_info.items():
            described = attrs.asdict(given) if isinstance(given, TokenMeta) else given
            if not isinstance(described, Mapping):
                raise InvalidInput("token_info", "each value needs symbol and decimals")
            address, meta = token_entry(self.chain_id, {**described, "address": key}, "token_info")
            if meta is None:
                raise InvalidInput("token_info", "each value needs symbol and decimals")
            info[address] = meta
        for entry in self.tokens:
            if _is_address_entry(entry):
                address, meta = entry, registry_token(self.chain_id, entry)
            else:
                address, meta = token_entry(self.chain_id, entry, "tokens")
            addresses.append(address)
            if meta is not None:
                info.setdefault(address, meta)
        object.__setattr__(self, "tokens", tuple(addresses))
        object.__setattr__(self, "token_info", info)

    @property
    def endpoints(self) -> tuple[str, ...]:
        """``rpc_url`` then ``rpc_urls``, each once: the order an EVM chain's calls try."""
        first = (self.rpc_url,) if self.rpc_url else ()
        return tuple(dict.fromkeys((*first, *self.rpc_urls)))

    @property
    def kind(self) -> ChainKind:
        """EVM or Tron, from the chain id."""
        return chain_kind(self.chain_id)

    @property
    def explorer(self) -> tuple[str | None, str | None]:
        """The transaction and address templates in force: the configured ones, else the
        built-in ones of a well-known chain (a chain configured only for its node keeps them)."""
        tx, address = EXPLORERS.get(self.chain_id, (None, None))
        return self.explorer_url or tx, self.explorer_address_url or address


def _check_template(template: str | None, field: str, placeholder: str) -> None:
    """An explorer template is an http(s) URL holding its placeholder: the checkout page
    turns it into links a payer clicks, so a ``javascript:`` one must never get there."""
    if template is None:
        return
    if not template.startswith(("https://", "http://")) or placeholder not in template:
        raise InvalidInput(field, f"must be an http(s) URL containing {placeholder}")
    if any(c.isspace() or c in '"<>' for c in template):
        raise InvalidInput(field, "must not contain spaces, quotes or angle brackets")


def _scan(host: str, tron: bool = False) -> tuple[str, str]:
    if tron:
        return f"https://{host}/#/transaction/{{tx}}", f"https://{host}/#/address/{{address}}"
    return f"https://{host}/tx/{{tx}}", f"https://{host}/address/{{address}}"


#: Block explorers of the default public chains, for the checkout page's transaction links.
EXPLORERS: dict[int, tuple[str, str]] = {
    1: _scan("etherscan.io"),
    10: _scan("optimistic.etherscan.io"),
    56: _scan("bscscan.com"),
    137: _scan("polygonscan.com"),
    8453: _scan("basescan.org"),
    42161: _scan("arbiscan.io"),
    11155111: _scan("sepolia.etherscan.io"),
    728126428: _scan("tronscan.org", tron=True),
    2494104990: _scan("shasta.tronscan.org", tron=True),
    3448148188: _scan("nile.tronscan.org", tron=True),
}


def _default_chains() -> dict[int, ChainConfig]:
    evm = [
        (1, "ethereum", 12, "ETH"),
        (10, "optimism", 10, "ETH"),
        (56, "bsc", 15, "BNB"),
        (137, "polygon", 64, "POL"),
        (8453, "base", 10, "ETH"),
        (42161, "arbitrum", 10, "ETH"),
        (11155111, "sepolia", 3, "ETH"),
        (1337, "anvil-1337", 0, "ETH"),
        (31337, "anvil", 0, "ETH"),
    ]
    chains = {cid: ChainConfig(cid, name, conf, None, sym, 18) for cid, name, conf, sym in evm}
    for cid, name in TRON_CHAIN_IDS.items():
        chains[cid] = ChainConfig(cid, name, 19, None, "TRX", 6)
    return chains


def _stream_cap(raw: int | str) -> int:
    value = int(raw)
    if value < 0:
        raise InvalidInput("settings", f"expected a count of streams (0 or more), got {raw!r}")
    return value


def _positive(raw: float | str) -> float:
    """Seconds from a number or an environment string; zero or less makes no schedule."""
    value = float(raw)
    if not value > 0:
        raise InvalidInput("settings", f"expected a positive number of seconds, got {raw!r}")
    return value


def _whole_seconds(raw: int | str) -> int:
    """A ``Retry-After`` value: HTTP allows whole seconds only, and 0 would invite a storm."""
    value = int(raw)
    if value < 1:
        raise InvalidInput("storage_retry_after", "must be at least 1 second")
    return value


def _age(raw: int | str) -> int:
    """Whole seconds, 0 or more: a retention age."""
    value = int(raw)
    if value < 0:
        raise InvalidInput("settings", f"expected 0 or more seconds, got {raw!r}")
    return value


def _batch(raw: int | str) -> int:
    value = int(raw)
    if value < 1:
        raise InvalidInput("retention_batch", "must be at least 1")
    return value


def _count(raw: int | str, name: str) -> int:
    """A count that must be 1 or more, naming its setting when it is not."""
    value = int(raw)
    if value < 1:
        raise InvalidInput(name, "must be at least 1")
    return value


def _export_batch(raw: int | str) -> int:
    return _count(raw, "export_batch")


def _per_minute(raw: int | str, name: str) -> int:
    """A rate per minute: 0 turns the limit off."""
    value = int(raw)
    if value < 0:
        raise InvalidInput(name, "must be 0 (no limit) or more")
    return value


def _ip_challenge_limit(raw: int | str) -> int:
    return _per_minute(raw, "ip_challenge_limit")


def _ip_registration_limit(raw: int | str) -> int:
    return _per_minute(raw, "ip_registration_limit")


def _link_open_limit(raw: int | str) -> int:
    return _count(raw, "link_open_limit")


def _link_open_window(raw: int | str) -> int:
    return _count(raw, "link_open_window")


def _webhook_owner_concurrency(raw: int | str) -> int:
    return _count(raw, "webhook_owner_concurrency")


def _webhook_url_concurrency(raw: int | str) -> int:
    return _count(raw, "webhook_url_concurrency")


def _webhook_redeliver_limit(raw: int | str) -> int:
    return _count(raw, "webhook_redeliver_limit")


def _webhook_redeliver_window(raw: int | str) -> int:
    return _count(raw, "webhook_redeliver_window")


def _schedule(raw: Iterable[float | str] | str) -> tuple[float, ...]:
    """A tuple of delays from a sequence or a comma-separated string (``"5,30,120"``)."""
    items = raw.split(",") if isinstance(raw, str) else raw
    delays = tuple(_positive(item) for item in items if str(item).strip())
    if not delays:
        raise InvalidInput("webhook_retry_schedule", "needs at least one delay")
    return delays


def _prices(raw: Mapping[str, object]) -> dict[str, Decimal]:
    """Accept ``{"1:0xabc..": "3000"}`` with any address case; keys end up canonical."""
    from .domain.money import parse_amount
    from .domain.tokens import TokenId

    return {
        str(TokenId.parse(k, "prices")): parse_amount(v, f"prices[{k}]") for k, v in raw.items()
    }


AUTH_MODES = ("strict", "soft")
#: ``window``: concurrent and slightly reordered nonces pass, each (nonce, payload) once;
#: ``strict``: the interface's rule, every nonce above the last accepted (docs/decisions.md).
NONCE_MODES = ("window", "strict")


@attrs.frozen
class Settings:
    """Everything an operator can set, in one frozen record.

    Build it in code (``Settings(database_url=..., prices={...})``) or from the environment
    with ``Settings.from_env()``: each field reads ``PAYCORE_<FIELD>`` (upper case), and
    keyword overrides win. Values are checked and normalised as the record is built, so a
    bad one fails at startup with ``InvalidInput`` naming the field. Times are seconds
    unless a field says otherwise. README.md's Configuration section shows them in use.
    """

    #: Where everything is stored: ``sqlite:///file``, ``postgresql://...`` or ``memory://``.
    #: May hold a password: never printed whole (``paycore.ops.redaction``), nor in the repr.
    database_url: str = attrs.field(default="sqlite:///paycore.sqlite3", repr=redacted_repr)
    #: The default currency invoices are priced and deposits valued in (lowercase code).
    vs_currency: str = "usd"
    #: The host app's public address (``https://shop.example``, with a path if a proxy
    #: mounts the app below one); paycore's pages are at ``{public_url}{prefix}/...``. Unset,
    #: the address each invoice-creating request came in at is used (the framework's proxy
    #: handling applied when the host configured it). Either way an invoice's ``paymentUrl``
    #: is fixed when it is created, so every later reply, event and webhook repeats it.
    public_url: str | None = attrs.field(
        default=None, converter=_optional_base, validator=_absolute_url
    )
    #: The checkout page's address when it is not paycore's own under the mount prefix (a
    #: page of the host's): set, it wins over ``public_url`` and the request's address.
    checkout_url: str | None = attrs.field(
        default=None, converter=_optional_base, validator=_absolute_url
    )
    #: ``strict`` (session headers required on owner-scoped endpoints) or ``soft``
    #: (optional, but verified when sent): docs/interface.md §Modes.
    auth_mode: str = "strict"
    #: How long a session key registration lasts (30 days).
    session_key_ttl: int = 30 * 24 * 3600
    #: Live session keys per owner; one more is refused with 409.
    session_key_cap: int = 5
    #: ``window`` (default) or ``strict``; both refuse every replay.
    nonce_mode: str = "window"
    #: Width of the replay window, in nonce units (milliseconds for ``Date.now()`` clients):
    #: a nonce up to this far below the highest accepted one still passes if unseen, and the
    #: (nonce, payload) pairs inside it are remembered; anything lower is refused.
    nonce_window: int = attrs.field(default=60_000, converter=int)
    #: Milliseconds a nonce may lie ahead of the server's clock (``Date.now()`` units; small
    #: counters are never near it). Bounds how long a stray far-future nonce can lock a key.
    nonce_horizon_ms: int = attrs.field(default=3_600_000, converter=int)
    #: An invoice's validity window when POST /invoice gives no ``deadlineSecs`` (90 h).
    default_deadline_secs: int = 90 * 3600
    #: Leading zero bits a proof of work needs to create an invoice; 0 turns it off.
    pow_difficulty: int = 0
    #: How long a proof-of-work challenge can be used.
    challenge_ttl: int = 120
    #: How far a salt-signed call's ``salt`` may be from the server's clock.
    salt_window: int = 600
    #: Events one poll queue holds; beyond it the oldest are dropped.
    event_retention: int = 1000
    #: Most invoices GET /invoices answers without ``offset``/``limit``/``cursor`` (it
    #: streams them, in constant memory); more matches are refused with a 400 that says
    #: to page instead, so one request cannot keep a process busy for minutes.
    invoice_list_max: int = attrs.field(default=10_000, converter=int)
    #: Fraction of ``value`` an invoice may fall short by and still count as paid (BTCPay's
    #: "payment tolerance"); 0 means the full amount.
    underpayment_tolerance: Decimal = Decimal(0)
    #: Chain id -> ChainConfig; the defaults know the usual chains, without nodes.
    chains: Mapping[int, ChainConfig] = attrs.field(factory=_default_chains)
    #: Static prices ``{chainId}:{token}`` -> Decimal in ``vs_currency``; the static source.
    prices: Mapping[str, Decimal] = attrs.field(factory=dict, converter=_prices)
    #: Names of plugins not to load, even when installed (``PAYCORE_BLOCKED_PLUGINS=a,b``).
    blocked_plugins: tuple[str, ...] = ()
    # -- webhook delivery and the worker (docs/interface.md §Webhook deliveries) ---------------
    #: Seconds one webhook attempt may take in all -- connecting, sending, and the whole
    #: answer, however slowly it comes; anything but a 2xx in time is a failure.
    webhook_timeout: float = attrs.field(default=10.0, converter=_positive)
    #: Allow webhook URLs that resolve to private, loopback or link-local addresses. Off,
    #: they are refused when set and again at each delivery (DNS answers change).
    webhook_allow_private: bool = attrs.field(default=False, converter=_flag)
    #: Seconds before the 2nd, 3rd, ... attempt; after the last, ``webhook_retry_every``.
    webhook_retry_schedule: tuple[float, ...] = attrs.field(
        default=(5, 30, 120, 600, 1800, 3600), converter=_schedule
    )
    #: Seconds between attempts once ``webhook_retry_schedule`` is used up.
    webhook_retry_every: float = attrs.field(default=7200.0, converter=_positive)
    #: A delivery whose next attempt would come later than this many seconds after it was
    #: queued (or redelivered) is marked failed instead.
    webhook_retry_horizon: float = attrs.field(default=86400.0, converter=_positive)
    #: Each delay is scaled by a random factor in [1 - jitter, 1 + jitter], so receivers
    #: coming back from an outage are not hit by every retry at the same instant.
    webhook_retry_jitter: float = attrs.field(default=0.2, converter=float)
    #: Seconds a dispatcher's claim on a delivery lasts: a killed dispatcher's claims are
    #: retried after it. Longer than ``webhook_timeout``, or live claims would lapse.
    webhook_lease: float = attrs.field(default=60.0, converter=_positive)
    #: Concurrent POSTs of one dispatcher (events of one invoice always go one at a time).
    webhook_concurrency: int = attrs.field(default=8, converter=int)
    #: Of those, how many one owner's deliveries may hold at once, so that a slow or
    #: hostile receiver delays only its own merchant's events (``webhooks.fairness``).
    webhook_owner_concurrency: int = attrs.field(default=4, converter=_webhook_owner_concurrency)
    #: And how many may go to one webhook URL at once, whichever owners point at it.
    webhook_url_concurrency: int = attrs.field(default=4, converter=_webhook_url_concurrency)
    #: Redelivery calls (``/webhook/redeliver``, ``/webhook/redeliver-failed``) one owner may
    #: make per ``webhook_redeliver_window`` seconds in one server process; more are 429.
    webhook_redeliver_limit: int = attrs.field(default=10, converter=_webhook_redeliver_limit)
    #: Seconds of that window.
    webhook_redeliver_window: int = attrs.field(default=60, converter=_webhook_redeliver_window)
    #: Seconds the worker waits when nothing is due; changes made in its own process wake
    #: it at once.
    worker_poll_interval: float = attrs.field(default=1.0, converter=_positive)
    #: Seconds a signal consumer's lease on a handler's queue lasts unless renewed (it is
    #: renewed every third of it while a handler runs): after a consumer is killed, the
    #: handler it was running is taken over by another consumer after at most this long.
    signal_lease: float = attrs.field(default=30.0, converter=_positive)
    #: Seconds between the worker's expiry sweeps (``Gateway.expire_due``).
    worker_sweep_interval: float = attrs.field(default=15.0, converter=_positive)
    #: Deposits a chain watcher attributes per storage transaction: a range of
    #: ``block_batch`` blocks holding more is split, and only its last batch moves the
    #: cursor. Bigger batches ingest faster; each one holds its invoices' row locks (on
    #: SQLite the one write lock) until it commits, so other writers may wait that long.
    ingest_batch: int = attrs.field(default=500, converter=int)
    # -- WebSocket pushes (GET /ws) and their fan-out (docs/architecture.md §Events) ----------
    #: Redis that carries every committed change to the web workers' sockets, whichever
    #: process made it (another worker, ``paycore worker``'s sweeper). Unset, a change
    #: reaches only the sockets of the process that made it: right for one process.
    redis_url: str | None = attrs.field(default=None, converter=_optional_text, repr=redacted_repr)
    #: The pub/sub channel: one per deployment, so deployments sharing a Redis stay apart.
    redis_channel: str = "paycore:events"
    #: Events waiting to be written to one socket. A client that falls this far behind is
    #: disconnected (close 1013, it catches up by reading) instead of growing our memory.
    ws_queue_size: int = attrs.field(default=256, converter=_queue_size)
    #: Seconds between heartbeat comments on an idle invoice event stream
    #: (GET /invoice/{guid}/events), so proxies and the browser see it alive.
    event_stream_heartbeat: float = attrs.field(default=15.0, converter=_positive)
    #: Invoice event streams one process holds open on an event loop (Litestar): each a
    #: coroutine, no thread. Past it a new stream is answered 503 (the page polls).
    event_streams_max: int = attrs.field(default=10_000, converter=_stream_cap)
    #: Invoice event streams one process holds open where each holds a thread (Flask under
    #: gthread): kept below the worker's threads (``paycore serve --threads``, 8), so plain
    #: requests still find one. Past it a new stream is answered 503 (the page polls).
    event_streams_threaded_max: int = attrs.field(default=4, converter=_stream_cap)
    #: Seconds a new socket has to send its register frame before it is closed (4401).
    ws_register_timeout: float = attrs.field(default=30.0, converter=_positive)
    #: Seconds between re-reads of a registered socket's session key, so a deregistered
    #: key stops receiving pushes; an expiring one is cut at its ``expiresAt`` regardless.
    ws_recheck_interval: float = attrs.field(default=60.0, converter=_positive)
    #: Open sockets one client address may hold per web process; past it an upgrade is
    #: answered 429 with ``Retry-After`` (paycore.realtime.limits).
    ws_max_per_ip: int = attrs.field(default=256, converter=_at_least_one)
    #: Of those, sockets that have not yet sent a register frame that verified.
    ws_max_unregistered_per_ip: int = attrs.field(default=32, converter=_at_least_one)
    #: Registered sockets one owner may hold per web process; past it the register frame
    #: is answered with close 4429.
    ws_max_per_owner: int = attrs.field(default=64, converter=_at_least_one)
    # -- e-mail notifications (POST /setEmailNotifications; docs/management.md) -----------------
    #: SMTP server for deposit and withdrawal notices; unset, no e-mail is ever sent.
    smtp_host: str | None = attrs.field(default=None, converter=_optional_text)
    #: The SMTP server's port (587: submission with STARTTLS).
    smtp_port: int = attrs.field(default=587, converter=int)
    #: The From address of every notice.
    smtp_from: str = "paycore@localhost"
    #: Upgrade the connection with STARTTLS before logging in (submission on port 587).
    smtp_starttls: bool = attrs.field(default=True, converter=_flag)
    #: The SMTP login; unset, no login is attempted.
    smtp_user: str | None = attrs.field(default=None, converter=_optional_text)
    #: Never logged nor shown in the settings' repr.
    smtp_password: str | None = attrs.field(default=None, converter=_optional_text, repr=False)
    #: Seconds one SMTP conversation may take.
    smtp_timeout: float = attrs.field(default=10.0, converter=_positive)
    # -- staking helpers (docs/interface.md §Staking helpers, Ethereum only) -------------------
    #: The ``PaycoreStaking`` contract the /mev* helpers build transactions for; unset, they
    #: answer 400. It lives on ``staking_chain_id``, which needs an EVM backend (rpc_url).
    staking_contract: str | None = attrs.field(default=None, converter=_staking_contract)
    #: The chain of ``staking_contract`` (Ethereum mainnet).
    staking_chain_id: int = attrs.field(default=1, converter=int)
    # -- prices: sources, refresher, staleness, rate lock (docs/prices.md) --------------------
    #: More vsCurrencies besides ``vs_currency`` (lowercase codes); each gets its own table,
    #: and an invoice created with ``vsCurrency`` is valued from that one.
    vs_currencies: tuple[str, ...] = attrs.field(default=(), converter=_price_opts.currencies)
    #: Seconds a price may be old and still value a deposit or show on GET /prices. An older
    #: one is kept but unused: the deposit waits for a fresh price instead.
    max_price_age: int = attrs.field(default=900, converter=_price_opts.whole_seconds)
    #: Seconds between the worker's price refreshes.
    price_refresh_interval: float = attrs.field(default=60.0, converter=_positive)
    #: Source names in the order they are asked (e.g. ``chainlink,coingecko,static``);
    #: empty: plugin registration order, the static source last.
    price_sources: tuple[str, ...] = attrs.field(default=(), converter=_price_opts.source_names)
    #: A token's own source order, overriding ``price_sources``: ``{"1:0x..": ["static"]}``.
    price_source_overrides: Mapping[str, tuple[str, ...]] = attrs.field(
        factory=dict, converter=_price_opts.source_overrides
    )
    #: Tokens to keep priced besides those configuration already names.
    price_tokens: tuple[str, ...] = attrs.field(default=(), converter=_price_opts.token_ids)
    #: Stablecoins worth exactly 1 of a currency, for the static source: ``{"1:0x..": "usd"}``.
    price_pegs: Mapping[str, str] = attrs.field(factory=dict, converter=_price_opts.pegs)
    #: Static prices in other currencies: ``{"eur": {"1:0x0000..": "2800"}}``.
    prices_by_currency: Mapping[str, Mapping[str, Decimal]] = attrs.field(
        factory=dict, converter=_price_opts.price_tables
    )
    #: Lock each accepted token's price at invoice creation for deposits up to the deadline;
    #: off (docs/interface.md): a deposit is valued from the table in force when it is attributed.
    rate_lock: bool = attrs.field(default=False, converter=_flag)
    #: The CoinGecko(-compatible) HTTP source: off unless enabled.
    coingecko_enabled: bool = attrs.field(default=False, converter=_flag)
    #: Its base URL: the public API, ``https://pro-api.coingecko.com`` with a Pro key, or any
    #: server answering in the same shapes.
    coingecko_url: str = attrs.field(default="https://api.coingecko.com", repr=redacted_repr)
    #: The CoinGecko API key, sent in ``coingecko_key_header``; never logged.
    coingecko_api_key: str | None = attrs.field(default=None, converter=_optional_text, repr=False)
    #: ``x-cg-demo-api-key`` (Demo plan) or ``x-cg-pro-api-key`` (Pro plan).
    coingecko_key_header: str = "x-cg-demo-api-key"
    #: Chain id -> CoinGecko coin id of its native coin (``/simple/price?ids=``).
    coingecko_coin_ids: Mapping[int, str] = attrs.field(
        factory=_price_opts.default_coin_ids, converter=_price_opts.coin_ids
    )
    #: Chain id -> CoinGecko asset platform of its tokens (``/simple/token_price/{id}``).
    coingecko_platforms: Mapping[int, str] = attrs.field(
        factory=_price_opts.default_platforms, converter=_price_opts.platforms
    )
    #: Seconds one CoinGecko request may take.
    coingecko_timeout: float = attrs.field(default=10.0, converter=_positive)
    #: Coin ids or contract addresses per request.
    coingecko_batch_size: int = attrs.field(default=50, converter=_price_opts.at_least_one)
    #: Retries of a request answered 429 or 5xx, each after Retry-After or a backoff.
    coingecko_max_retries: int = attrs.field(default=3, converter=int)
    #: Longest wait (seconds) for a retry; a longer Retry-After ends the round instead.
    coingecko_max_backoff: float = attrs.field(default=30.0, converter=_positive)
    #: Chainlink AggregatorV3 feeds per token: ``{"1:0x0000..": {"aggregator": "0x5f4e..",
    #: "chain_id": 1, "vs_currency": "usd", "max_age": 3600}}`` (or ``rpc_url`` for the node).
    chainlink_feeds: Mapping[str, _price_opts.ChainlinkFeed] = attrs.field(
        factory=dict, converter=_price_opts.chainlink_feeds, repr=redacted_repr
    )
    # -- retention (docs/operations.md §Retention) --------------------------------------------
    #: Seconds between the worker's prune rounds (``paycore.ops.retention``).
    worker_prune_interval: float = attrs.field(default=3600.0, converter=_positive)
    #: Seconds an outbox event is kept after it was created; older ones are deleted once no
    #: poll queue can still hand them out. 0 keeps every event.
    retention_events: int = attrs.field(default=30 * 24 * 3600, converter=_age)
    #: Seconds a settled (delivered or failed) webhook delivery and its attempt log are kept
    #: after its last attempt; pending deliveries are never deleted. 0 keeps them all.
    retention_deliveries: int = attrs.field(default=30 * 24 * 3600, converter=_age)
    #: Seconds past their expiry that remembered salt signatures and unused proof-of-work
    #: challenges are kept: more than the clocks of the processes may disagree by.
    retention_expired_grace: int = attrs.field(default=3600, converter=_age)
    #: Rows one prune transaction deletes at most: a short lock, many transactions.
    retention_batch: int = attrs.field(default=500, converter=_batch)
    # -- merchant tools: the accounting export and payment links (docs/interface.md) ------------
    #: Rows the accounting export (GET /export) reads per storage transaction, and sends per
    #: chunk: its memory use is one batch, whatever the range.
    export_batch: int = attrs.field(default=500, converter=_export_batch)
    #: Invoices one payment link may make per ``link_open_window`` seconds; more opens are
    #: answered 429 until the window ends (docs/decisions.md, "Payment links").
    link_open_limit: int = attrs.field(default=30, converter=_link_open_limit)
    #: Seconds of a payment link's rate window.
    link_open_window: int = attrs.field(default=60, converter=_link_open_window)
    # -- per-client limits on unauthenticated writes (paycore.ops.limits) ------------------------
    #: POST /invoice/challenge per client IP per minute (all at once at most); more are
    #: answered 429 with Retry-After. 0 turns the limit off.
    ip_challenge_limit: int = attrs.field(default=120, converter=_ip_challenge_limit)
    #: POST /auth/register-pubkey per client IP per minute, the same way: each makes a
    #: session key and a poll queue, and a wallet costs nothing to make. 0 turns it off.
    ip_registration_limit: int = attrs.field(default=30, converter=_ip_registration_limit)
    #: Base of each payment link's ``url`` (``{payment_link_url}/{id}``); unset, it is the
    #: checkout page's address with its last path segment replaced by ``link``, which is
    #: where paycore serves GET /link/{id} when the checkout page is its own.
    payment_link_url: str | None = attrs.field(default=None, converter=_optional_text)
    # -- outages (docs/operations.md) ---------------------------------------------------------
    #: Seconds a 503 "storage unavailable" answer asks clients to wait (``Retry-After``).
    storage_retry_after: int = attrs.field(default=5, converter=_whole_seconds)
    #: Seconds between two log lines about the same kind of failure while storage is down.
    outage_log_interval: float = attrs.field(default=10.0, converter=_positive)
    #: Longest wait, in seconds, between a worker loop's retries while storage is down; the
    #: waits double from the loop's own pace up to this.
    worker_backoff_max: float = attrs.field(default=30.0, converter=_positive)

    @webhook_lease.validator
    def _delivery_settings_agree(self, _attribute: object, lease: float) -> None:
        """attrs runs validators once every field is set, so this one can compare fields."""
        if lease <= self.webhook_timeout:
            raise InvalidInput("webhook_lease", "must be longer than webhook_timeout")
        if not 0 <= self.webhook_retry_jitter < 1:
            raise InvalidInput("webhook_retry_jitter", "must be at least 0 and below 1")
        if self.webhook_concurrency < 1:
            raise InvalidInput("webhook_concurrency", "must be at least 1")

    def __attrs_post_init__(self) -> None:
        if self.auth_mode not in AUTH_MODES:
            raise InvalidInput("auth_mode", f"must be one of {', '.join(AUTH_MODES)}")
        if self.session_key_cap < 1:
            raise InvalidInput("session_key_cap", "must be at least 1")
        if self.ingest_batch < 1:
            raise InvalidInput("ingest_batch", "must be at least 1")
        if self.invoice_list_max < 1:
            raise InvalidInput("invoice_list_max", "must be at least 1")
        if self.nonce_mode not in NONCE_MODES:
            raise InvalidInput("nonce_mode", f"must be one of {', '.join(NONCE_MODES)}")
        # Bounded so that ``highest - window`` and ``now_ms + horizon`` stay in 64 bits.
        if not 1 <= self.nonce_window <= 2**53:
            raise InvalidInput("nonce_window", "must be between 1 and 2**53")
        if not 0 <= self.nonce_horizon_ms <= 2**53:
            raise InvalidInput("nonce_horizon_ms", "must be between 0 and 2**53")

    def secret_values(self) -> set[str]:
        """Every secret this configuration holds: URL passwords and API keys, and the key
        and password fields. A Gateway hands them to ``paycore.ops.redaction`` so that they are
        masked wherever a log line or an error text quotes them."""
        urls = [self.database_url, self.redis_url, self.coingecko_url]
        urls += [url for c in self.chains.values() for url in c.endpoints]
        urls += [f.rpc_url for f in self.chainlink_feeds.values()]
        found = {part for url in urls for part in url_secrets(url)}
        fields = [self.smtp_password, self.coingecko_api_key]
        fields += [c.api_key for c in self.chains.values()]
        fields += [c.faucet_key for c in self.chains.values()]
        found.update(value for value in fields if value)
        return found

    def chain(self, chain_id: int, field: str = "chainId") -> ChainConfig:
        """The configuration of ``chain_id``; InvalidInput on ``field`` if it is unknown."""
        try:
            return self.chains[chain_id]
        except KeyError:
            raise InvalidInput(field, f"unsupported chain {chain_id}") from None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from ``PAYCORE_<FIELD>`` variables; keyword overrides win over both."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field in attrs.fields(cls):
            raw = env.get("PAYCORE_" + field.name.upper())
            if raw is None:
                continue
            values[field.name] = _parse_env(field.name, field.type, raw)
        values.update(overrides)
        return cls(**values)


def _parse_env(name: str, type_: Any, raw: str) -> Any:
    type_text = str(type_)
    try:
        if type_text == "int":
            return int(raw)
        if type_text == "float":
            return float(raw)
        if type_text == "tuple[float, ...]":
            return tuple(float(p) for p in raw.split(",") if p.strip())
        if type_text == "Decimal":
            return Decimal(raw)
        if type_text.startswith("tuple"):
            return tuple(p.strip() for p in raw.split(",") if p.strip())
        if name == "prices":
            return dict(json.loads(raw))
        if name == "chains":
            return chains_from_env(raw)
    except (ValueError, ArithmeticError, TypeError) as exc:
        raise InvalidInput("PAYCORE_" + name.upper(), f"cannot parse: {exc}") from None
    return raw


def chains_from_env(raw: str) -> dict[int, ChainConfig]:
    """``PAYCORE_CHAINS``: a JSON object keyed by chain id, laid over the default chains.

    An operator who adds a node to one chain should not lose the others, so an entry for a
    default chain changes only the keys it gives, a new id adds a chain, ``null`` removes a
    default one, and ``"defaults": false`` starts from no chain at all. An entry may repeat
    its ``chain_id`` (what ``paycore contracts deploy`` prints does); one that differs from
    its key is refused rather than guessed at. (``Settings(chains=...)`` in Python is the
    whole table, as given.)
    """
    where = "PAYCORE_CHAINS"
    table = json.loads(raw)
    if not isinstance(table, dict):
        raise InvalidInput(where, "must be a JSON object keyed by chain id")
    keep = table.pop("defaults", True)
    if not isinstance(keep, bool):
        raise InvalidInput(where, '"defaults" must be true or false')
    chains = _default_chains() if keep else {}
    for key, entry in table.items():
        try:
            chain_id = int(key)
        except ValueError:
            raise InvalidInput(where, f"{key!r} is not a chain id") from None
        if entry is None:
            chains.pop(chain_id, None)
            continue
        if not isinstance(entry, dict):
            raise InvalidInput(where, f"the entry of chain {chain_id} must be an object or null")
        fields = dict(entry)
        repeated = fields.pop("chain_id", chain_id)
        if repeated != chain_id and str(repeated) != str(chain_id):
            raise InvalidInput(
                where, f"the entry under {chain_id} says chain_id {repeated}: they must match"
            )
        base = chains.get(chain_id)
        chains[chain_id] = (
            attrs.evolve(base, **fields) if base else ChainConfig(chain_id=chain_id, **fields)
        )
    return chains
