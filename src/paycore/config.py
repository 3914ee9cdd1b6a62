"""Settings: one frozen record, overridable by ``PAYCORE_*`` variables (docs/interface.md §Limits).

Everything an operator can turn lives here so that the configuration reference in README.md
has a single source, and so that a test can build a gateway with exactly the knobs it needs.
A chain's own entry is ``paycore.chain_config.ChainConfig``, and the converters of the
fields are ``paycore.config_fields``'; both are importable from here as before.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import attrs

from . import config_fields as _fields
from .chain_config import (
    EXPLORERS,
    FAUCET_CHAIN_IDS,
    TRACE_MODES,
    ChainConfig,
    chains_from_env,
    default_chains,
)
from .errors import InvalidInput
from .ops.redaction import redacted_repr, url_secrets
from .prices import options as _price_opts

#: The default chains' table under its former name (tests and scripts know it).
_default_chains = default_chains

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
        default=None, converter=_fields.optional_base, validator=_fields.absolute_url
    )
    #: The checkout page's address when it is not paycore's own under the mount prefix (a
    #: page of the host's): set, it wins over ``public_url`` and the request's address.
    checkout_url: str | None = attrs.field(
        default=None, converter=_fields.optional_base, validator=_fields.absolute_url
    )
    #: Serve the merchant dashboard at ``{prefix}/dashboard`` (docs/dashboard.md). Off, its
    #: page and files answer 404: a host that builds its own back office turns it off.
    dashboard_enabled: bool = attrs.field(default=True, converter=_fields.flag)
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
    #: "payment tolerance"); 0 means the full amount. At least 0 and below 1.
    underpayment_tolerance: Decimal = attrs.field(default=Decimal(0), converter=Decimal)
    #: Chain id -> ChainConfig; the defaults know the usual chains, without nodes.
    chains: Mapping[int, ChainConfig] = attrs.field(factory=default_chains)
    #: Static prices ``{chainId}:{token}`` -> Decimal in ``vs_currency``; the static source.
    prices: Mapping[str, Decimal] = attrs.field(factory=dict, converter=_fields.prices)
    #: Names of plugins not to load, even when installed (``PAYCORE_BLOCKED_PLUGINS=a,b``).
    blocked_plugins: tuple[str, ...] = ()
    # -- webhook delivery and the worker (docs/interface.md §Webhook deliveries) ---------------
    #: Seconds one webhook attempt may take in all -- connecting, sending, and the whole
    #: answer, however slowly it comes; anything but a 2xx in time is a failure.
    webhook_timeout: float = attrs.field(default=10.0, converter=_fields.positive)
    #: Allow webhook URLs that resolve to private, loopback or link-local addresses. Off,
    #: they are refused when set and again at each delivery (DNS answers change).
    webhook_allow_private: bool = attrs.field(default=False, converter=_fields.flag)
    #: Seconds before the 2nd, 3rd, ... attempt; after the last, ``webhook_retry_every``.
    webhook_retry_schedule: tuple[float, ...] = attrs.field(
        default=(5, 30, 120, 600, 1800, 3600), converter=_fields.schedule
    )
    #: Seconds between attempts once ``webhook_retry_schedule`` is used up.
    webhook_retry_every: float = attrs.field(default=7200.0, converter=_fields.positive)
    #: A delivery whose next attempt would come later than this many seconds after it was
    #: queued (or redelivered) is marked failed instead.
    webhook_retry_horizon: float = attrs.field(default=86400.0, converter=_fields.positive)
    #: Each delay is scaled by a random factor in [1 - jitter, 1 + jitter], so receivers
    #: coming back from an outage are not hit by every retry at the same instant.
    webhook_retry_jitter: float = attrs.field(default=0.2, converter=float)
    #: Seconds a dispatcher's claim on a delivery lasts: a killed dispatcher's claims are
    #: retried after it. Longer than ``webhook_timeout``, or live claims would lapse.
    webhook_lease: float = attrs.field(default=60.0, converter=_fields.positive)
    #: Concurrent POSTs of one dispatcher (events of one invoice always go one at a time).
    webhook_concurrency: int = attrs.field(default=8, converter=int)
    #: Of those, how many one owner's deliveries may hold at once, so that a slow or
    #: hostile receiver delays only its own merchant's events (``webhooks.fairness``).
    webhook_owner_concurrency: int = attrs.field(
        default=4, converter=_fields.webhook_owner_concurrency
    )
    #: And how many may go to one webhook URL at once, whichever owners point at it.
    webhook_url_concurrency: int = attrs.field(default=4, converter=_fields.webhook_url_concurrency)
    #: Redelivery calls (``/webhook/redeliver``, ``/webhook/redeliver-failed``) one owner may
    #: make per ``webhook_redeliver_window`` seconds in one server process; more are 429.
    webhook_redeliver_limit: int = attrs.field(
        default=10, converter=_fields.webhook_redeliver_limit
    )
    #: Seconds of that window.
    webhook_redeliver_window: int = attrs.field(
        default=60, converter=_fields.webhook_redeliver_window
    )
    #: Seconds the worker waits when nothing is due; changes made in its own process wake
    #: it at once.
    worker_poll_interval: float = attrs.field(default=1.0, converter=_fields.positive)
    #: Seconds a signal consumer's lease on a handler's queue lasts unless renewed (it is
    #: renewed every third of it while a handler runs): after a consumer is killed, the
    #: handler it was running is taken over by another consumer after at most this long.
    signal_lease: float = attrs.field(default=30.0, converter=_fields.positive)
    #: Seconds between the worker's expiry sweeps (``Gateway.expire_due``).
    worker_sweep_interval: float = attrs.field(default=15.0, converter=_fields.positive)
    #: Seconds before a subscription period is due that the worker issues its invoice
    #: (docs/subscriptions.md); 3 days.
    subscription_lead: int = attrs.field(default=3 * 86_400, converter=_fields.subscription_lead)
    #: Deposits a chain watcher attributes per storage transaction: a range of
    #: ``block_batch`` blocks holding more is split, and only its last batch moves the
    #: cursor. Bigger batches ingest faster; each one holds its invoices' row locks (on
    #: SQLite the one write lock) until it commits, so other writers may wait that long.
    ingest_batch: int = attrs.field(default=500, converter=int)
    # -- WebSocket pushes (GET /ws) and their fan-out (docs/architecture.md §Events) ----------
    #: Redis that carries every committed change to the web workers' sockets, whichever
    #: process made it (another worker, ``paycore worker``'s sweeper). Unset, a change
    #: reaches only the sockets of the process that made it: right for one process.
    redis_url: str | None = attrs.field(
        default=None, converter=_fields.optional_text, repr=redacted_repr
    )
    #: The pub/sub channel: one per deployment, so deployments sharing a Redis stay apart.
    redis_channel: str = "paycore:events"
    #: Events waiting to be written to one socket. A client that falls this far behind is
    #: disconnected (close 1013, it catches up by reading) instead of growing our memory.
    ws_queue_size: int = attrs.field(default=256, converter=_fields.queue_size)
    #: Seconds between heartbeat comments on an idle invoice event stream
    #: (GET /invoice/{guid}/events), so proxies and the browser see it alive.
    event_stream_heartbeat: float = attrs.field(default=15.0, converter=_fields.positive)
    #: Invoice event streams one process holds open on an event loop (Litestar): each a
    #: coroutine, no thread. Past it a new stream is answered 503 (the page polls).
    event_streams_max: int = attrs.field(default=10_000, converter=_fields.stream_cap)
    #: Invoice event streams one process holds open where each holds a thread (Flask under
    #: gthread): kept below the worker's threads (``paycore serve --threads``, 8), so plain
    #: requests still find one. Past it a new stream is answered 503 (the page polls).
    event_streams_threaded_max: int = attrs.field(default=4, converter=_fields.stream_cap)
    #: Seconds a new socket has to send its register frame before it is closed (4401).
    ws_register_timeout: float = attrs.field(default=30.0, converter=_fields.positive)
    #: Seconds between re-reads of a registered socket's session key, so a deregistered
    #: key stops receiving pushes; an expiring one is cut at its ``expiresAt`` regardless.
    ws_recheck_interval: float = attrs.field(default=60.0, converter=_fields.positive)
    #: Open sockets one client address may hold per web process; past it an upgrade is
    #: answered 429 with ``Retry-After`` (paycore.realtime.limits).
    ws_max_per_ip: int = attrs.field(default=256, converter=_fields.at_least_one)
    #: Of those, sockets that have not yet sent a register frame that verified.
    ws_max_unregistered_per_ip: int = attrs.field(default=32, converter=_fields.at_least_one)
    #: Registered sockets one owner may hold per web process; past it the register frame
    #: is answered with close 4429.
    ws_max_per_owner: int = attrs.field(default=64, converter=_fields.at_least_one)
    # -- e-mail notifications (POST /setEmailNotifications; docs/management.md) -----------------
    #: SMTP server for deposit and withdrawal notices; unset, no e-mail is ever sent.
    smtp_host: str | None = attrs.field(default=None, converter=_fields.optional_text)
    #: The SMTP server's port (587: submission with STARTTLS).
    smtp_port: int = attrs.field(default=587, converter=int)
    #: The From address of every notice.
    smtp_from: str = "paycore@localhost"
    #: Upgrade the connection with STARTTLS before logging in (submission on port 587).
    smtp_starttls: bool = attrs.field(default=True, converter=_fields.flag)
    #: The SMTP login; unset, no login is attempted.
    smtp_user: str | None = attrs.field(default=None, converter=_fields.optional_text)
    #: Never logged nor shown in the settings' repr.
    smtp_password: str | None = attrs.field(
        default=None, converter=_fields.optional_text, repr=False
    )
    #: Seconds one SMTP conversation may take.
    smtp_timeout: float = attrs.field(default=10.0, converter=_fields.positive)
    # -- staking helpers (docs/interface.md §Staking helpers, Ethereum only) -------------------
    #: The ``PaycoreStaking`` contract the /mev* helpers build transactions for; unset, they
    #: answer 400. It lives on ``staking_chain_id``, which needs an EVM backend (rpc_url).
    staking_contract: str | None = attrs.field(default=None, converter=_fields.staking_contract)
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
    price_refresh_interval: float = attrs.field(default=60.0, converter=_fields.positive)
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
    rate_lock: bool = attrs.field(default=False, converter=_fields.flag)
    #: The CoinGecko(-compatible) HTTP source: off unless enabled.
    coingecko_enabled: bool = attrs.field(default=False, converter=_fields.flag)
    #: Its base URL: the public API, ``https://pro-api.coingecko.com`` with a Pro key, or any
    #: server answering in the same shapes.
    coingecko_url: str = attrs.field(default="https://api.coingecko.com", repr=redacted_repr)
    #: The CoinGecko API key, sent in ``coingecko_key_header``; never logged.
    coingecko_api_key: str | None = attrs.field(
        default=None, converter=_fields.optional_text, repr=False
    )
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
    coingecko_timeout: float = attrs.field(default=10.0, converter=_fields.positive)
    #: Coin ids or contract addresses per request.
    coingecko_batch_size: int = attrs.field(default=50, converter=_price_opts.at_least_one)
    #: Retries of a request answered 429 or 5xx, each after Retry-After or a backoff.
    coingecko_max_retries: int = attrs.field(default=3, converter=int)
    #: Longest wait (seconds) for a retry; a longer Retry-After ends the round instead.
    coingecko_max_backoff: float = attrs.field(default=30.0, converter=_fields.positive)
    #: Chainlink AggregatorV3 feeds per token: ``{"1:0x0000..": {"aggregator": "0x5f4e..",
    #: "chain_id": 1, "vs_currency": "usd", "max_age": 3600}}`` (or ``rpc_url`` for the node).
    chainlink_feeds: Mapping[str, _price_opts.ChainlinkFeed] = attrs.field(
        factory=dict, converter=_price_opts.chainlink_feeds, repr=redacted_repr
    )
    # -- retention (docs/operations.md §Retention) --------------------------------------------
    #: Seconds between the worker's prune rounds (``paycore.ops.retention``).
    worker_prune_interval: float = attrs.field(default=3600.0, converter=_fields.positive)
    #: Seconds an outbox event is kept after it was created; older ones are deleted once no
    #: poll queue can still hand them out. 0 keeps every event.
    retention_events: int = attrs.field(default=30 * 24 * 3600, converter=_fields.age)
    #: Seconds a settled (delivered or failed) webhook delivery and its attempt log are kept
    #: after its last attempt; pending deliveries are never deleted. 0 keeps them all.
    retention_deliveries: int = attrs.field(default=30 * 24 * 3600, converter=_fields.age)
    #: Seconds past their expiry that remembered salt signatures and unused proof-of-work
    #: challenges are kept: more than the clocks of the processes may disagree by.
    retention_expired_grace: int = attrs.field(default=3600, converter=_fields.age)
    #: Rows one prune transaction deletes at most: a short lock, many transactions.
    retention_batch: int = attrs.field(default=500, converter=_fields.batch)
    # -- merchant tools: the accounting export and payment links (docs/interface.md) ------------
    #: Rows the accounting export (GET /export) reads per storage transaction, and sends per
    #: chunk: its memory use is one batch, whatever the range.
    export_batch: int = attrs.field(default=500, converter=_fields.export_batch)
    #: Invoices one payment link may make per ``link_open_window`` seconds; more opens are
    #: answered 429 until the window ends (docs/decisions.md, "Payment links").
    link_open_limit: int = attrs.field(default=30, converter=_fields.link_open_limit)
    #: Seconds of a payment link's rate window.
    link_open_window: int = attrs.field(default=60, converter=_fields.link_open_window)
    # -- per-client limits on unauthenticated writes (paycore.ops.limits) ------------------------
    #: POST /invoice/challenge per client IP per minute (all at once at most); more are
    #: answered 429 with Retry-After. 0 turns the limit off.
    ip_challenge_limit: int = attrs.field(default=120, converter=_fields.ip_challenge_limit)
    #: POST /auth/register-pubkey per client IP per minute, the same way: each makes a
    #: session key and a poll queue, and a wallet costs nothing to make. 0 turns it off.
    ip_registration_limit: int = attrs.field(default=30, converter=_fields.ip_registration_limit)
    #: Base of each payment link's ``url`` (``{payment_link_url}/{id}``); unset, it is the
    #: checkout page's address with its last path segment replaced by ``link``, which is
    #: where paycore serves GET /link/{id} when the checkout page is its own.
    payment_link_url: str | None = attrs.field(default=None, converter=_fields.optional_text)
    #: Answer a signed ``GET /invoice/{guid}`` or ``POST /invoice`` on the event loop where
    #: the store can make it all or nothing there (Litestar on a SQLite file: no thread hop,
    #: which costs more CPU than a short fsync waits). Off on a disk whose fsync is slow:
    #: the loop, and every socket on it, would wait for each one.
    inline_writes: bool = attrs.field(default=True, converter=_fields.flag)
    # -- outages (docs/operations.md) ---------------------------------------------------------
    #: Seconds a 503 "storage unavailable" answer asks clients to wait (``Retry-After``).
    storage_retry_after: int = attrs.field(default=5, converter=_fields.whole_seconds)
    #: Seconds between two log lines about the same kind of failure while storage is down.
    outage_log_interval: float = attrs.field(default=10.0, converter=_fields.positive)
    #: Longest wait, in seconds, between a worker loop's retries while storage is down; the
    #: waits double from the loop's own pace up to this.
    worker_backoff_max: float = attrs.field(default=30.0, converter=_fields.positive)

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
        # A NaN or infinite tolerance would make every comparison with it raise or pass.
        tolerance = self.underpayment_tolerance
        if not tolerance.is_finite() or not 0 <= tolerance < 1:
            raise InvalidInput("underpayment_tolerance", "must be at least 0 and below 1")

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


__all__ = [
    "AUTH_MODES",
    "EXPLORERS",
    "FAUCET_CHAIN_IDS",
    "NONCE_MODES",
    "TRACE_MODES",
    "ChainConfig",
    "Settings",
    "chains_from_env",
]
