"""SQLAlchemy Core tables: the schema that the initial Alembic revision creates.

Every name is prefixed ``paycore_`` because the storage usually shares a database with the
merchant's own app, whose tables are as likely as ours to be called ``invoices``.

Identifiers (guids, addresses, hashes) use the "C" collation on PostgreSQL so that ORDER BY
and equality are bytewise, as they are in SQLite and in Python: the tie-break order of two
pages must not depend on the server's locale.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    Dialect,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Numeric,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.types import TypeDecorator, TypeEngine

from .decimals import exact, exact_text

#: Same precision as ``paycore.domain.money``: integer part below 10**30, 18 places used of 30.
MONEY_PRECISION, MONEY_SCALE = 60, 30


class Money(TypeDecorator[Decimal]):
    """An exact Decimal column: NUMERIC(60, 30) where the database has exact decimals, text
    on SQLite, whose NUMERIC affinity would turn 0.000000000000000001 into a float."""

    impl = Numeric(MONEY_PRECISION, MONEY_SCALE, asdecimal=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(80))
        return dialect.type_descriptor(Numeric(MONEY_PRECISION, MONEY_SCALE, asdecimal=True))

    def process_bind_param(self, value: Decimal | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        return exact_text(value) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> Decimal | None:
        return None if value is None else exact(value)


def Key(length: int = 255) -> TypeEngine[str]:  # noqa: N802 - reads as a type in Column()
    """A bytewise-ordered identifier string (see the module docstring)."""
    return String(length).with_variant(String(length, collation="C"), "postgresql")


#: SQLite only auto-increments an ``INTEGER PRIMARY KEY``; elsewhere ids need 64 bits.
Id = BigInteger().with_variant(Integer(), "sqlite")

#: Deterministic constraint names, so the migration and this module agree on every name.
metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "pk": "pk_%(table_name)s",
    }
)

#: ``seq`` is the creation sequence (revision 0008): every listing and cursor orders by it, so
#: invoices created in the same second keep their creation order. An identity on PostgreSQL,
#: ``INTEGER PRIMARY KEY AUTOINCREMENT`` on SQLite (never reused, stable across VACUUM).
invoices = Table(
    "paycore_invoices",
    metadata,
    Column("seq", Id, primary_key=True, autoincrement=True),
    Column("guid", Key(64), nullable=False, unique=True),
    Column("created_at", BigInteger, nullable=False),
    Column("deadline", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),
    Column("value", Money, nullable=False),
    Column("token", Key(), nullable=False),
    Column("chain_id", BigInteger, nullable=False),
    Column("description", Text, nullable=False),
    Column("address", Key(), nullable=False),
    Column("owner", Key(), nullable=False),
    Column("accepted_tokens", JSON, nullable=False),
    Column("data", JSON, nullable=False),
    Column("paid_amount", Money, nullable=False),
    Column("payments", JSON, nullable=False),
    Column("vs_currency", String(16), nullable=False),
    # redirectUrl, cancelUrl, redirectAutomatically (revision 0012) and checkoutUrl, the
    # page paymentUrl was fixed to at creation (no revision: a key of the same JSON); NULL
    # when none is set
    Column("checkout", JSON, nullable=True),
    # Pages of an owner's invoices read (owner, seq) alone: an index-only scan skips an offset.
    Index(None, "owner", "seq"),
    Index(None, "chain_id", "address", "seq"),
    Index(None, "status", "deadline"),
    Index(None, "chain_id", "deadline"),  # the watched set (revision 0003)
    # The invoice search (revision 0019, paycore.storage.search): the lowercased text of the
    # description and data; an owner's invoices by status and creation time, newest first;
    # and by creation time with every column GET /stats groups and sums, so that its one
    # statement reads the index only.
    Column("search_text", Text, nullable=False, server_default=""),
    Index(None, "owner", "status", "created_at", "seq"),
    Index(
        "ix_paycore_invoices_owner_created_stats",
        "owner",
        "created_at",
        "seq",
        "status",
        "chain_id",
        "token",
        "vs_currency",
        "paid_amount",
    ),
    sqlite_autoincrement=True,
)

#: PostgreSQL finds text inside ``search_text`` by a trigram GIN index (pg_trgm), which
#: revision 0019 creates when the extension can be had; no other dialect has one, and it is
#: not in this metadata (its operator class lives in whichever schema holds the extension).
SEARCH_TEXT_INDEX = "ix_paycore_invoices_search_text_trgm"
#: SQLite's counterpart: an FTS5 table (trigram tokenizer) over ``search_text`` whose rowid is
#: the invoice's ``seq``, kept by triggers (revision 0019, in batches since 0023); FTS5 names
#: its own tables after it.
SEARCH_TEXT_FTS = "paycore_invoices_text"
#: Its high-water mark, one row (revision 0023): every invoice with ``seq <= upto`` is in the
#: FTS5 table, none above (the triggers add them in batches).
SEARCH_TEXT_INDEXED = f"{SEARCH_TEXT_FTS}_indexed"

transactions = Table(
    "paycore_transactions",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("chain_id", BigInteger, nullable=False),
    Column("tx_hash", Key(), nullable=False),
    Column("log_index", BigInteger, nullable=False),
    Column("token", Key(), nullable=False),
    Column("type", String(16), nullable=False),
    Column("from_address", Key(), nullable=False),
    Column("to_address", Key(), nullable=True),
    Column("amount", Money, nullable=False),
    Column("vs_value", Money, nullable=False),
    Column("timestamp", BigInteger, nullable=False),
    Column("owner", Key(), nullable=False),
    Column("guid", Key(64), nullable=True),
    Column("counted", Boolean, nullable=False),
    # The deposit's block, re-checked for reorgs; the flag once one replaced it (0006).
    Column("block_number", BigInteger, nullable=True),
    Column("block_hash", Key(66), nullable=True),
    Column("reorged", Boolean, nullable=False, server_default=false()),
    # The rate vs_value was computed at: price, its source, its time, its currency (0011).
    Column("rate", Money, nullable=True),
    Column("rate_source", String(64), nullable=True),
    Column("rate_at", BigInteger, nullable=True),
    Column("rate_currency", String(16), nullable=True),
    # One transfer, however often a watcher sees it (paycore.storage: insert_transaction).
    UniqueConstraint(
        "chain_id", "tx_hash", "log_index", "token", name="uq_paycore_transactions_transfer"
    ),
    # GET /transactions in its own order, counted rows only (revision 0008): a page, an
    # offset skipped and a keyset cursor are all range reads of this one index.
    Index(
        "ix_paycore_transactions_owner_newest",
        "owner",
        "timestamp",
        "tx_hash",
        "log_index",
        "chain_id",
        "token",
        postgresql_where=text("reorged IS false"),
        sqlite_where=text("reorged IS 0"),
    ),
    Index(None, "chain_id", "block_number"),  # recorded_deposits (revision 0006)
)

session_keys = Table(
    "paycore_session_keys",
    metadata,
    Column("address", Key(), primary_key=True),
    Column("public_key", String(255), nullable=False),
    Column("owner", Key(), nullable=False),
    Column("registered_at", BigInteger, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
    Column("last_seen_nonce", BigInteger, nullable=False),
    Column("encryption_public_key", String(255), nullable=True),
    #: Not part of ``SessionKey``: nonces at or below it are refused. Migration 0006 sets it
    #: to the key's last_seen_nonce, because keys older than ``paycore_session_nonces`` have
    #: no record of which nonces below that they used; new keys get 0.
    Column("nonce_floor", BigInteger, nullable=False, default=0, server_default="0"),
    Index(None, "owner", "registered_at"),
)

#: Signed messages a session key has had accepted within its replay window (see
#: ``paycore.auth.session``): one row per (key, nonce, sha256 hex of the signed payload).
session_nonces = Table(
    "paycore_session_nonces",
    metadata,
    Column("address", Key(), primary_key=True),
    Column("nonce", BigInteger, primary_key=True, autoincrement=False),
    Column("digest", Key(64), primary_key=True),
    sqlite_with_rowid=False,  # stored in the key's order (revision 0024)
)

wallet_indexes = Table(
    "paycore_wallet_indexes",
    metadata,
    Column("owner", Key(), primary_key=True),
    Column("chain_id", BigInteger, primary_key=True, autoincrement=False),
    Column("next_index", BigInteger, nullable=False),
)

pow_challenges = Table(
    "paycore_pow_challenges",
    metadata,
    Column("challenge", Key(), primary_key=True),
    Column("address", Key(), nullable=False),
    Column("difficulty", Integer, nullable=False),
    Column("expires_at", BigInteger, nullable=False),
)

seen_signatures = Table(
    "paycore_seen_signatures",
    metadata,
    Column("digest", Key(), primary_key=True),
    Column("expires_at", BigInteger, nullable=False),
)

webhooks = Table(
    "paycore_webhooks",
    metadata,
    Column("owner", Key(), primary_key=True),
    Column("url", Text, nullable=False),
    Column("secret", String(255), nullable=False),
)

#: An owner's webhook endpoints besides the ``/webhook/set`` URL (revision 0017):
#: ``paycore.webhooks.endpoints``. ``types``: the event types it is sent, space-separated.
webhook_endpoints = Table(
    "paycore_webhook_endpoints",
    metadata,
    Column("owner", Key(), primary_key=True),
    Column("id", Key(40), primary_key=True),
    Column("url", Text, nullable=False),
    Column("secret", String(255), nullable=False),
    Column("types", Text, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("created_at", BigInteger, nullable=False),
)

#: An owner's identity on the checkout page (revision 0014): ``paycore.merchant``.
merchant_profiles = Table(
    "paycore_merchant_profiles",
    metadata,
    Column("owner", Key(), primary_key=True),
    Column("name", String(100), nullable=False),
    Column("logo_url", String(500), nullable=True),
    Column("support", String(500), nullable=True),
    Column("updated_at", BigInteger, nullable=False),
)

#: ``id`` is the event's place in every queue: handed out by the database at insert (an
#: identity; SQLite's AUTOINCREMENT), so committing writers never wait on each other for it.
#: Readers only go up to a horizon below which every id is settled (``sql.py``, revision 0008).
outbox = Table(
    "paycore_outbox",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("owner", Key(), nullable=False),
    Column("guid", Key(64), nullable=False),
    Column("payload", JSON, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("type", String(64), nullable=True),  # revision 0013; NULL: invoice.updated
    Index(None, "owner", "id"),
    sqlite_autoincrement=True,  # ids strictly increase even after the newest row is deleted
)

#: Rows per owner, maintained in the transaction that inserts them (revision 0008), so a
#: page's ``total`` is a sum over a handful of rows instead of a count over the table.
#: ``kind`` is ``invoices`` or ``transactions`` (counted ones: not reorged). Each (owner,
#: kind, chain) is split over a few rows (``sql.COUNT_STRIPES``) so that concurrent inserts
#: of one owner rarely wait on the same row lock; the total is their sum.
owner_counts = Table(
    "paycore_owner_counts",
    metadata,
    Column("owner", Key(), primary_key=True),
    Column("kind", String(16), primary_key=True),
    Column("chain_id", BigInteger, primary_key=True, autoincrement=False),
    Column("stripe", Integer, primary_key=True, autoincrement=False),
    Column("n", BigInteger, nullable=False),
    sqlite_with_rowid=False,  # stored in the key's order (revision 0024)
)

#: A poll queue: a cursor over its owner's outbox rows. Every event whose id is at or below
#: ``last_seq`` has been handed out (or dropped over the cap), and no such event can still
#: appear. (The name is from before revision 0008, when queues counted a separate ``seq``.)
event_queues = Table(
    "paycore_event_queues",
    metadata,
    Column("consumer", Key(), primary_key=True),
    Column("owner", Key(), nullable=False),
    Column("last_seq", BigInteger, nullable=False),
)

poll_tokens = Table(
    "paycore_poll_tokens",
    metadata,
    Column("token", Key(), primary_key=True),
    Column("owner", Key(), nullable=False),
    Column("created_at", BigInteger, nullable=False),
)

#: One row per outbox event queued for an owner's webhook (``paycore.storage``: webhook
#: deliveries). ``lease_token``/``lease_until`` are a dispatcher's claim, which lapses on its
#: own if that dispatcher dies. The (guid, status, id) index serves the claim's "is an earlier
#: event of this invoice still pending?" test; (status, next_attempt_at) finds due work.
webhook_deliveries = Table(
    "paycore_webhook_deliveries",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("webhook_id", Key(64), nullable=False, unique=True),
    Column("event_id", BigInteger, nullable=False),
    Column("owner", Key(), nullable=False),
    Column("guid", Key(64), nullable=False),
    Column("body", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("next_attempt_at", BigInteger, nullable=True),
    Column("retry_from", BigInteger, nullable=False),
    Column("lease_token", String(64), nullable=True),
    Column("lease_until", BigInteger, nullable=True),
    #: Revision 0017: the endpoint it goes to; NULL: the owner's ``/webhook/set`` URL.
    Column("endpoint_id", Key(40), nullable=True),
    Index(None, "status", "next_attempt_at"),
    Index(None, "guid", "status", "id"),
    Index(None, "owner", "id"),
    sqlite_autoincrement=True,
)

#: The delivery log: one row per attempt, kept after the delivery settles.
webhook_attempts = Table(
    "paycore_webhook_attempts",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("delivery_id", BigInteger, nullable=False),
    Column("attempted_at", BigInteger, nullable=False),
    Column("url", Text, nullable=False),
    Column("status_code", Integer, nullable=True),
    Column("error", Text, nullable=True),
    Column("latency_ms", Integer, nullable=False),
    Index(None, "delivery_id", "id"),
)

#: One row per chain a watcher scans (revision 0003): the cursor -- the last block scanned and
#: its hash, re-checked for reorgs -- and the lease that keeps one watcher per chain. Kept in
#: one row so that moving the cursor and proving the lease are a single UPDATE.
chain_cursors = Table(
    "paycore_chain_cursors",
    metadata,
    Column("chain_id", BigInteger, primary_key=True, autoincrement=False),
    Column("block_number", BigInteger, nullable=True),
    Column("block_hash", Key(66), nullable=True),
    Column("holder", Key(), nullable=True),
    Column("lease_until", BigInteger, nullable=False),
)

#: Host-signal leases (revision 0015): which consumer process is running a handler's queue
#: (``event_queues`` row ``signal:<name>``) until ``lease_until`` (unix ms). Only the holder
#: may move that queue's position (``paycore.events.signals``); a lapsed lease is taken over.
signal_leases = Table(
    "paycore_signal_leases",
    metadata,
    Column("consumer", Key(), primary_key=True),
    Column("holder", Key(), nullable=True),
    Column("lease_until", BigInteger, nullable=False),
)

#: App keys (revision 0004): an address acts for one owner at most, hence the primary key.
app_keys = Table(
    "paycore_app_keys",
    metadata,
    Column("address", Key(), primary_key=True),
    Column("owner", Key(), nullable=False),
    Column("added_at", BigInteger, nullable=False),
    Column("added_by", Key(), nullable=False),
    Index(None, "owner", "added_at"),
)

#: Where an owner's deposit and withdrawal notices go, per chain (revision 0004); ``enabled``
#: is the operator's switch, never the merchant's.
email_settings = Table(
    "paycore_email_settings",
    metadata,
    Column("owner", Key(), primary_key=True),
    Column("chain_id", BigInteger, primary_key=True, autoincrement=False),
    Column("email", String(320), nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("enabled_at", BigInteger, nullable=True),
)

#: Deposit indexes left out of withdrawals (revision 0004): one row per disabled index.
disabled_indexes = Table(
    "paycore_disabled_indexes",
    metadata,
    Column("owner", Key(), primary_key=True),
    Column("chain_id", BigInteger, primary_key=True, autoincrement=False),
    Column("wallet_index", BigInteger, primary_key=True, autoincrement=False),
    Column("disabled_at", BigInteger, nullable=False),
)

#: Notices already sent (revision 0004), so an e-mail goes out once across processes.
notices = Table(
    "paycore_notices",
    metadata,
    Column("key", Key(), primary_key=True),
    Column("claimed_at", BigInteger, nullable=False),
)

#: The last good price of each token per vsCurrency (revision 0005): what every process
#: values deposits with and GET /prices shows (``paycore.prices``).
prices = Table(
    "paycore_prices",
    metadata,
    Column("token", Key(), primary_key=True),
    Column("vs_currency", Key(16), primary_key=True),
    Column("price", Money, nullable=False),
    Column("fetched_at", BigInteger, nullable=False),
    Column("source", String(64), nullable=False),
    Column("checked_at", BigInteger, nullable=False),
)

#: Rates locked at invoice creation (revision 0005, ``Settings.rate_lock``).
invoice_quotes = Table(
    "paycore_invoice_quotes",
    metadata,
    Column("guid", Key(64), primary_key=True),
    Column("token", Key(), primary_key=True),
    Column("vs_currency", Key(16), nullable=False),
    Column("price", Money, nullable=False),
    Column("fetched_at", BigInteger, nullable=False),
    Column("source", String(64), nullable=False),
)

#: Deposits waiting for a fresh price (revision 0005), in the order the watcher parked them.
parked_deposits = Table(
    "paycore_parked_deposits",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("chain_id", BigInteger, nullable=False),
    Column("tx_hash", Key(), nullable=False),
    Column("log_index", BigInteger, nullable=False),
    Column("token", Key(), nullable=False),
    Column("from_address", Key(), nullable=False),
    Column("to_address", Key(), nullable=False),
    Column("amount", Money, nullable=False),
    Column("timestamp", BigInteger, nullable=False),
    Column("block_number", BigInteger, nullable=False),
    Column("block_hash", Key(66), nullable=False),
    Column("reason", Text, nullable=False),
    Column("parked_at", BigInteger, nullable=False),
    UniqueConstraint(
        "chain_id", "tx_hash", "log_index", "token", name="uq_paycore_parked_deposits_transfer"
    ),
    Index(None, "chain_id", "id"),
)

#: Payment links (revision 0010): what each invoice a link makes gets, its amount or the
#: bounds a buyer chooses within, its expiry and use limit, and the per-link rate window
#: (``window_start``, ``window_opens``) that ``use_payment_link`` checks and moves in the
#: same statement that counts a use.
payment_links = Table(
    "paycore_payment_links",
    metadata,
    Column("id", Key(64), primary_key=True),
    Column("owner", Key(), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("chain_id", BigInteger, nullable=False),
    Column("description", Text, nullable=False),
    Column("accepted_tokens", JSON, nullable=False),
    Column("token", Key(), nullable=False),
    Column("vs_currency", String(16), nullable=False),
    Column("amount", Money, nullable=True),
    Column("min_amount", Money, nullable=True),
    Column("max_amount", Money, nullable=True),
    Column("deadline_secs", BigInteger, nullable=True),
    Column("data", JSON, nullable=False),
    Column("expires_at", BigInteger, nullable=True),
    Column("max_uses", BigInteger, nullable=True),
    Column("uses", BigInteger, nullable=False),
    Column("disabled_at", BigInteger, nullable=True),
    Column("window_start", BigInteger, nullable=False),
    Column("window_opens", BigInteger, nullable=False),
    Index(None, "owner", "created_at"),
)

#: Refunds (revision 0009): money sent back to a payer from the owner's wallet, one row per
#: refund, never inside the invoice's row (``paycore.storage``: refunds). ``seq`` keeps the
#: order they were made in; ``id`` is the public one. Pending refunds of a chain are what
#: the watcher's withdrawals are matched against, hence the (chain_id, status) index.
refunds = Table(
    "paycore_refunds",
    metadata,
    Column("seq", Id, primary_key=True, autoincrement=True),
    Column("id", Key(64), nullable=False, unique=True),
    Column("guid", Key(64), nullable=False),
    Column("owner", Key(), nullable=False),
    Column("chain_id", BigInteger, nullable=False),
    Column("token", Key(), nullable=False),
    Column("to_address", Key(), nullable=False),
    Column("amount", Money, nullable=False),
    Column("vs_value", Money, nullable=False),
    Column("rate", Money, nullable=False),
    Column("rate_source", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("tx_hash", Key(), nullable=True),
    Column("log_index", BigInteger, nullable=True),
    Column("settled_at", BigInteger, nullable=True),
    Index(None, "guid", "seq"),
    Index(None, "chain_id", "status", "seq"),
    sqlite_autoincrement=True,
)

#: Idempotency keys (revision 0016): the first answer to a creating write, per (owner,
#: endpoint, key), kept for a day (``paycore.storage.idempotency``). The primary key is what
#: makes concurrent claims of one key wait for each other; ``created_at`` is what retention
#: prunes by.
idempotency_keys = Table(
    "paycore_idempotency_keys",
    metadata,
    Column("scope", Key(), primary_key=True),
    Column("route", Key(64), primary_key=True),
    Column("key", Key(), primary_key=True),
    Column("fingerprint", String(64), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("status", Integer, nullable=False),
    Column("content_type", String(100), nullable=False),
    Column("body", LargeBinary, nullable=False),
    Index(None, "created_at"),
)

#: Detected transfers (revision 0018): mined, not yet ``confirmations`` deep, provisional
#: (``paycore.domain.detected``). The watcher replaces a chain's rows each pass; a read of
#: an invoice asks for its own by ``guid``.
detected_transfers = Table(
    "paycore_detected_transfers",
    metadata,
    Column("chain_id", BigInteger, primary_key=True),
    Column("tx_hash", Key(), primary_key=True),
    Column("log_index", BigInteger, primary_key=True),
    Column("token", Key(), primary_key=True),
    Column("guid", Key(64), nullable=False),
    Column("from_address", Key(), nullable=False),
    Column("to_address", Key(), nullable=False),
    Column("amount", Money, nullable=False),
    Column("block_number", BigInteger, nullable=False),
    Column("block_hash", Key(66), nullable=False),
    Column("timestamp", BigInteger, nullable=False),
    Column("confirmations", BigInteger, nullable=False),
    Column("required", BigInteger, nullable=False),
    Column("seen_at", BigInteger, nullable=False),
    Index(None, "guid", "block_number"),
)

#: Subscriptions (revision 0020, ``paycore.storage.subscriptions``): plans, subscriptions and
#: their periods. The periods' primary key (subscription_id, idx) is what makes a period's
#: invoice issued once however many workers race; ``next_issue_at`` is what the worker
#: looks due subscriptions up by; ``status`` of a period, what it watches.
subscription_plans = Table(
    "paycore_subscription_plans",
    metadata,
    Column("id", Key(64), primary_key=True),
    Column("owner", Key(), nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Column("name", Text, nullable=False),
    Column("amount", Money, nullable=False),
    Column("currency", String(16), nullable=False),
    Column("chain_id", BigInteger, nullable=False),
    Column("accepted_tokens", JSON, nullable=False),
    Column("period_unit", String(8), nullable=False),
    Column("period_count", BigInteger, nullable=False),
    Column("trial_days", BigInteger, nullable=False),
    Column("grace_days", BigInteger, nullable=False),
    Index(None, "owner", "created_at"),
)
subscriptions = Table(
    "paycore_subscriptions",
    metadata,
    Column("id", Key(64), primary_key=True),
    Column("owner", Key(), nullable=False),
    Column("plan_id", Key(64), nullable=False),
    Column("reference", Text, nullable=False),
    Column("email", Text, nullable=True),
    Column("created_at", BigInteger, nullable=False),
    Column("anchor", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),
    Column("next_index", BigInteger, nullable=False),
    Column("next_issue_at", BigInteger, nullable=False),
    Column("updated_at", BigInteger, nullable=False),
    Column("cancelled_at", BigInteger, nullable=True),
    Index(None, "owner", "created_at"),
    Index(None, "status", "next_issue_at"),
)
subscription_periods = Table(
    "paycore_subscription_periods",
    metadata,
    Column("subscription_id", Key(64), primary_key=True),
    Column("idx", BigInteger, primary_key=True),
    Column("starts_at", BigInteger, nullable=False),
    Column("ends_at", BigInteger, nullable=False),
    Column("guid", Key(64), nullable=False),
    Column("issued_at", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),
    Index(None, "status", "subscription_id", "idx"),
)

#: Payout batches (revision 0021, docs/payouts.md): who pays, on which chain, through which
#: contract; ``calls`` is the space-separated keccak-256 of each batch transaction's calldata.
payout_batches = Table(
    "paycore_payout_batches",
    metadata,
    Column("id", Key(64), primary_key=True),
    Column("owner", Key(), nullable=False),
    Column("chain_id", BigInteger, nullable=False),
    Column("contract", Key(), nullable=False),
    Column("calls", Text, nullable=False),
    Column("created_at", BigInteger, nullable=False),
    Index(None, "owner", "created_at"),
)

#: One row per recipient of a batch (revision 0021), each with its own state; ``value`` is
#: the amount in base units as decimal text (a uint256 does not fit BIGINT).
payouts = Table(
    "paycore_payouts",
    metadata,
    Column("batch_id", Key(64), primary_key=True),
    Column("line", BigInteger, primary_key=True),
    Column("to_address", Key(), nullable=False),
    Column("token", Key(), nullable=False),
    Column("amount", Money, nullable=False),
    Column("value", String(80), nullable=False),
    Column("reference", String(255), nullable=False),
    Column("call", BigInteger, nullable=False),
    Column("status", String(16), nullable=False),
    Column("tx_hash", Key(), nullable=True),
    Column("updated_at", BigInteger, nullable=False),
)

#: Hashes ``POST /payouts/confirm`` was given before they were mined (revision 0022): the
#: worker reads them again until mined and settles their rows (docs/payouts.md).
payout_watch = Table(
    "paycore_payout_watch",
    metadata,
    Column("batch_id", Key(64), primary_key=True),
    Column("tx_hash", Key(), primary_key=True),
    Column("added_at", BigInteger, nullable=False),
    Index(None, "added_at"),
)
