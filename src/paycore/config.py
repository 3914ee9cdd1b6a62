"""Settings: one frozen record, defaults from DESIGN.md, overridable by ``PAYCORE_*`` variables.

Everything an operator can turn lives here so that the configuration reference in README.md
has a single source, and so that a test can build a gateway with exactly the knobs it needs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

import attrs

from .errors import InvalidInput
from .tokens import TRON_CHAIN_IDS, ChainKind, chain_kind


@attrs.frozen
class ChainConfig:
    chain_id: int
    name: str
    confirmations: int = 1
    rpc_url: str | None = None
    native_symbol: str = "ETH"
    native_decimals: int = 18

    @property
    def kind(self) -> ChainKind:
        return chain_kind(self.chain_id)


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


AUTH_MODES = ("strict", "soft")


@attrs.frozen
class Settings:
    database_url: str = "sqlite:///paycore.sqlite3"
    vs_currency: str = "usd"
    checkout_url: str = "http://127.0.0.1:8000/checkout"
    auth_mode: str = "strict"
    session_key_ttl: int = 30 * 24 * 3600
    session_key_cap: int = 5
    default_deadline_secs: int = 90 * 3600
    pow_difficulty: int = 0
    challenge_ttl: int = 120
    salt_window: int = 600
    event_retention: int = 1000
    #: Fraction of ``value`` an invoice may fall short by and still count as paid (BTCPay's
    #: "payment tolerance"); 0 means the full amount.
    underpayment_tolerance: Decimal = Decimal(0)
    chains: Mapping[int, ChainConfig] = attrs.field(factory=_default_chains)
    #: Static prices ``{chainId}:{token}`` -> Decimal in ``vs_currency``; the static source.
    prices: Mapping[str, Decimal] = attrs.field(factory=dict, converter=lambda v: _prices(v))
    blocked_plugins: tuple[str, ...] = ()

    def __attrs_post_init__(self) -> None:
        if self.auth_mode not in AUTH_MODES:
            raise InvalidInput("auth_mode", f"must be one of {', '.join(AUTH_MODES)}")
        if self.session_key_cap < 1:
            raise InvalidInput("session_key_cap", "must be at least 1")

    def chain(self, chain_id: int, field: str = "chainId") -> ChainConfig:
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


def _prices(raw: Mapping[str, object]) -> dict[str, Decimal]:
    """Accept ``{"1:0xabc..": "3000"}`` with any address case; keys end up canonical."""
    from .money import parse_amount
    from .tokens import TokenId

    return {
        str(TokenId.parse(k, "prices")): parse_amount(v, f"prices[{k}]") for k, v in raw.items()
    }


def _parse_env(name: str, type_: Any, raw: str) -> Any:
    type_text = str(type_)
    try:
        if type_text == "int":
            return int(raw)
        if type_text == "Decimal":
            return Decimal(raw)
        if type_text.startswith("tuple"):
            return tuple(p.strip() for p in raw.split(",") if p.strip())
        if name == "prices":
            return dict(json.loads(raw))
        if name == "chains":
            return {int(k): ChainConfig(chain_id=int(k), **v) for k, v in json.loads(raw).items()}
    except (ValueError, ArithmeticError, TypeError) as exc:
        raise InvalidInput("PAYCORE_" + name.upper(), f"cannot parse: {exc}") from None
    return raw
