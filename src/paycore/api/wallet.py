"""Handlers for the smart-wallet and withdrawal helpers, and /getFaucet (docs/interface.md).

Each is served as GET (fields in the query) and POST (fields in a JSON body): ``Call.read``
reads either into the route's typed request. Handlers check what needs the chain, then
call the chain's ``WalletBackend``; what touches a chain lives there.

Authentication (the interface leaves it open): reads of an owner's money -- /getBalances,
/history -- and /initWithdraw are owner-scoped like GET /transactions (session headers in
strict mode; the ``ownerAddress`` asked for must be the session's owner). /getAddress,
/initWallet, /deployWallet and /getFaucet handle nothing private: addresses are public
math, an unsigned deployment is the same for anyone who asks, and a relayed deployment
was signed by its sender.
"""

from __future__ import annotations

from ..chains import WalletBackend, WithdrawRequest
from ..config import FAUCET_CHAIN_IDS, Settings
from ..domain.aliases import resolve_token
from ..domain.records import Json
from ..domain.tokens import normalize_address, normalize_owner, normalize_token_address
from ..errors import Gone, InvalidInput
from .requests import DeployWallet, Faucet, GetAddress, History, InitWithdraw, OwnerChain
from .routing import Call


def _backend(call: Call, chain_id: int) -> WalletBackend:
    call.gateway.settings.chain(chain_id)
    backend = call.gateway.chains.get(chain_id)
    if not isinstance(backend, WalletBackend):
        raise InvalidInput("chainId", f"no smart-wallet backend is configured for chain {chain_id}")
    return backend


def _contract_type(value: str | None) -> str:
    if value is None or value == "":
        return "deposit"
    if value not in ("deposit", "wallet"):
        raise InvalidInput("contractType", "must be deposit or wallet")
    return value


def get_address(call: Call) -> Json:
    request = call.read(GetAddress)
    backend = _backend(call, request.chain_id)
    contract_type = _contract_type(request.contract_type)
    index = request.index
    if index is None and contract_type == "deposit":
        raise InvalidInput("index", "is required")
    if index is not None and index >= 1 << 256:
        raise InvalidInput("index", "must be below 2**256")
    owner = normalize_owner(request.owner_address, "ownerAddress")
    address = backend.get_address(owner, request.chain_id, index or 0, contract_type)
    return {"depositAddress": address, "contractType": contract_type, "index": index}


def init_wallet(call: Call) -> Json:
    request = call.read(OwnerChain)
    backend = _backend(call, request.chain_id)
    return backend.init_wallet(normalize_owner(request.owner_address), request.chain_id)


def deploy_wallet(call: Call) -> Json:
    request = call.read(DeployWallet)
    return _backend(call, request.chain_id).deploy_wallet(request.chain_id, request.raw_tx)


def get_balances(call: Call) -> list[Json]:
    request = call.read(OwnerChain)
    backend = _backend(call, request.chain_id)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    return backend.balances(call.gateway, owner, request.chain_id)


def init_withdraw(call: Call) -> Json:
    request = call.read(InitWithdraw)
    chain_id = request.chain_id
    backend = _backend(call, chain_id)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    return backend.init_withdraw(
        call.gateway, owner, chain_id, _withdraw(call.gateway.settings, request, chain_id)
    )


def _withdraw(settings: Settings, request: InitWithdraw, chain_id: int) -> WithdrawRequest:
    if request.token_address is not None and request.token is not None:
        raise InvalidInput("token", "give tokenAddress or token, not both")
    field = "tokenAddress" if request.token_address is not None else "token"
    raw_token = request.token_address if request.token_address is not None else request.token
    if raw_token is None:
        raise InvalidInput("tokenAddress", "is required (the zero address for the native coin)")
    if ":" in raw_token:
        parsed = resolve_token(settings, raw_token, field, chain_id=chain_id)
        if parsed.chain_id != chain_id:
            raise InvalidInput(field, f"is on chain {parsed.chain_id}, not {chain_id}")
        token = parsed.address
    else:
        token = normalize_token_address(chain_id, raw_token, field)
    if (request.amount is None) == (request.value is None):
        raise InvalidInput("amount", "give exactly one of amount (decimal) and value (base units)")
    if request.amount is not None and request.amount == 0:
        raise InvalidInput("amount", "must be greater than 0")
    if request.value is not None and not 0 < request.value < 1 << 256:
        raise InvalidInput("value", "must be between 1 and 2**256 - 1")
    return WithdrawRequest(
        to=normalize_address(chain_id, request.to, "to"),
        token=token,
        amount=request.amount,
        value=request.value,
        contract_type=_contract_type(request.contract_type),
    )


def history(call: Call) -> list[Json]:
    """The owner's deposits and withdrawals, newest first (a page of GET /transactions)."""
    gw = call.gateway
    request = call.read(History)
    if request.chain_id is not None:
        gw.settings.chain(request.chain_id)
    owner = call.owner_scope(request.owner_address, "ownerAddress")
    items, _total, _offset, _limit = gw.list_transactions(
        owner, chain_id=request.chain_id, offset=request.offset, limit=request.limit
    )
    return [item.to_wire() for item in items]


def withdraw(call: Call) -> Json:
    raise Gone(
        "/withdraw is deprecated: build the transaction with /initWithdraw, sign and "
        "broadcast it yourself; the withdrawal is detected on chain"
    )


def get_faucet(call: Call) -> Json:
    request = call.read(Faucet)
    if request.chain_id not in FAUCET_CHAIN_IDS:
        raise InvalidInput("chainId", "the faucet exists on chain 1337 and 31337 only")
    backend = _backend(call, request.chain_id)
    return backend.faucet(request.chain_id, normalize_address(request.chain_id, request.to, "to"))
