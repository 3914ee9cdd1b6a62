"""Handlers for the smart-wallet and withdrawal helpers, and /getFaucet (docs/interface.md).

Each is served as GET (fields in the query) and POST (fields in a JSON body): ``Call.body``
reads either. Handlers parse and check the request's fields, then call the chain's
``WalletBackend``; what touches a chain lives there.

Authentication (the interface leaves it open): reads of an owner's money -- /getBalances,
/history -- and /initWithdraw are owner-scoped like GET /transactions (session headers in
strict mode; the ``ownerAddress`` asked for must be the session's owner). /getAddress,
/initWallet, /deployWallet and /getFaucet handle nothing private: addresses are public
math, an unsigned deployment is the same for anyone who asks, and a relayed deployment
was signed by its sender.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ..chains import WalletBackend, WithdrawRequest
from ..config import FAUCET_CHAIN_IDS
from ..domain.money import parse_amount
from ..domain.records import Json
from ..domain.tokens import TokenId, normalize_address, normalize_owner, normalize_token_address
from ..errors import Gone, InvalidInput
from .routing import Call

_MAX_DIGITS = 78  # 2**256 - 1 has 78 digits: indexes and base-unit values fit


def _uint(body: dict[str, Any], name: str, *, required: bool, digits: int = 18) -> int | None:
    """A non-negative integer from JSON (a number) or a query string (digits)."""
    raw = body.get(name)
    if raw is None or raw == "":
        if required:
            raise InvalidInput(name, "is required")
        return None
    if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0:
        if len(str(raw)) > digits:
            raise InvalidInput(name, "is too large")
        return raw
    if isinstance(raw, str) and raw.isascii() and raw.isdigit() and len(raw) <= digits:
        return int(raw)
    raise InvalidInput(name, "must be a non-negative integer")


def _backend(call: Call, body: dict[str, Any]) -> tuple[WalletBackend, int]:
    chain_id = _uint(body, "chainId", required=True)
    assert chain_id is not None
    call.gateway.settings.chain(chain_id)
    backend = call.gateway.chains.get(chain_id)
    if not isinstance(backend, WalletBackend):
        raise InvalidInput("chainId", f"no smart-wallet backend is configured for chain {chain_id}")
    return backend, chain_id


def _contract_type(body: dict[str, Any]) -> str:
    value = body.get("contractType") or "deposit"
    if value not in ("deposit", "wallet"):
        raise InvalidInput("contractType", "must be deposit or wallet")
    return str(value)


def _owner(body: dict[str, Any]) -> str:
    return normalize_owner(body.get("ownerAddress"), "ownerAddress")


def get_address(call: Call) -> Json:
    body = call.body()
    backend, chain_id = _backend(call, body)
    contract_type = _contract_type(body)
    index = _uint(body, "index", required=contract_type == "deposit", digits=_MAX_DIGITS)
    if index is not None and index >= 1 << 256:
        raise InvalidInput("index", "must be below 2**256")
    address = backend.get_address(_owner(body), chain_id, index or 0, contract_type)
    return {"depositAddress": address, "contractType": contract_type, "index": index}


def init_wallet(call: Call) -> Json:
    body = call.body()
    backend, chain_id = _backend(call, body)
    return backend.init_wallet(_owner(body), chain_id)


def deploy_wallet(call: Call) -> Json:
    body = call.body()
    backend, chain_id = _backend(call, body)
    return backend.deploy_wallet(chain_id, body.get("rawTx"))


def get_balances(call: Call) -> list[Json]:
    body = call.body()
    backend, chain_id = _backend(call, body)
    owner = call.owner_scope(body.get("ownerAddress"), "ownerAddress")
    return backend.balances(call.gateway, owner, chain_id)


def init_withdraw(call: Call) -> Json:
    body = call.body()
    backend, chain_id = _backend(call, body)
    owner = call.owner_scope(body.get("ownerAddress"), "ownerAddress")
    return backend.init_withdraw(call.gateway, owner, chain_id, _withdraw_request(body, chain_id))


def _withdraw_request(body: dict[str, Any], chain_id: int) -> WithdrawRequest:
    field = "tokenAddress" if "tokenAddress" in body else "token"
    raw_token = body.get(field)
    if raw_token is None:
        raise InvalidInput("tokenAddress", "is required (the zero address for the native coin)")
    if isinstance(raw_token, str) and ":" in raw_token:
        parsed = TokenId.parse(raw_token, field)
        if parsed.chain_id != chain_id:
            raise InvalidInput(field, f"is on chain {parsed.chain_id}, not {chain_id}")
        token = parsed.address
    else:
        token = normalize_token_address(chain_id, raw_token, field)
    has_amount, has_value = body.get("amount") is not None, body.get("value") is not None
    if has_amount == has_value:
        raise InvalidInput("amount", "give exactly one of amount (decimal) and value (base units)")
    amount: Decimal | None = None
    value: int | None = None
    if has_amount:
        amount = parse_amount(body.get("amount"), "amount", allow_zero=False)
    else:
        value = _uint(body, "value", required=True, digits=_MAX_DIGITS)
        if not value or value >= 1 << 256:
            raise InvalidInput("value", "must be between 1 and 2**256 - 1")
    return WithdrawRequest(
        to=normalize_address(chain_id, body.get("to"), "to"),
        token=token,
        amount=amount,
        value=value,
        contract_type=_contract_type(body),
    )


def history(call: Call) -> list[Json]:
    """The owner's deposits and withdrawals, newest first (a page of GET /transactions)."""
    gw = call.gateway
    body = call.body()
    chain_id = _uint(body, "chainId", required=False)
    if chain_id is not None:
        gw.settings.chain(chain_id)
    owner = call.owner_scope(body.get("ownerAddress"), "ownerAddress")
    items, _total, _offset, _limit = gw.list_transactions(
        owner,
        chain_id=chain_id,
        offset=_uint(body, "offset", required=False),
        limit=_uint(body, "limit", required=False),
    )
    return [item.to_wire() for item in items]


def withdraw(call: Call) -> Json:
    raise Gone(
        "/withdraw is deprecated: build the transaction with /initWithdraw, sign and "
        "broadcast it yourself; the withdrawal is detected on chain"
    )


def get_faucet(call: Call) -> Json:
    body = call.body()
    chain_id = _uint(body, "chainId", required=True)
    if chain_id not in FAUCET_CHAIN_IDS:
        raise InvalidInput("chainId", "the faucet exists on chain 1337 and 31337 only")
    backend, chain_id = _backend(call, body)
    return backend.faucet(chain_id, normalize_address(chain_id, body.get("to"), "to"))
