"""``ChainConfig``: one chain paycore knows (its node, its contracts, its tokens, its
explorer), the chains known out of the box, and ``PAYCORE_CHAINS`` laid over them.

``Settings.chains`` holds these records (``paycore.config``); they live apart because a
chain's entry has its own rules -- addresses checked and made canonical for the chain's
kind, tokens named by address or by registry symbol, explorer templates that must be http(s)
-- and its own defaults.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

import attrs

from . import config_fields as _fields
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
from .ops.redaction import redacted_repr

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
    faucet_amount: Decimal = attrs.field(default=Decimal(1), converter=_fields.decimal)
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
    scan_native: bool = attrs.field(default=True, converter=_fields.flag)
    #: Report transfers mined but not yet ``confirmations`` deep as the invoice's provisional
    #: ``detected`` list ("payment detected, confirming"): each pass also reads the
    #: unconfirmed head blocks (docs/chains.md, Detection). Off: no read, the list stays empty.
    detect_unconfirmed: bool = attrs.field(default=True, converter=_fields.flag)
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
    api_key: str | None = attrs.field(default=None, repr=False, converter=_fields.optional_text)
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
    explorer_url: str | None = attrs.field(default=None, converter=_fields.optional_text)
    #: The same explorer's page of an address, ``{address}`` standing for it.
    explorer_address_url: str | None = attrs.field(default=None, converter=_fields.optional_text)

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


def default_chains() -> dict[int, ChainConfig]:
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
    chains = default_chains() if keep else {}
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
