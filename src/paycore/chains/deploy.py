"""Deploying ``PaycoreFactory`` on a chain: its constructor arguments, what a deployment
produced, and the ``ChainConfig`` that points paycore at it.

``paycore contracts deploy`` and the demo both come here, so a factory is deployed one way.
The chain's own steps are in ``paycore.chains.evm.deploy`` (through the deterministic CREATE2
deployer, so the factory has one address on every EVM chain) and
``paycore.chains.tron.deploy`` (a ``CreateSmartContract`` transaction); :func:`deploy_factory`
picks by the chain's kind.

On EVM chains the same run deploys ``PaycoreBatchPay`` (batch payouts) at its one fixed
CREATE2 address, and the printed ``ChainConfig`` names it as ``batch_pay``, so no operator
deploys it by hand; on Tron it is still deployed by hand.

The constructor (``src/paycore/contracts/PaycoreFactory.sol``) takes, in order:

1. ``initialAdmin``: who may change the fee settings and hand the role on;
2. ``initialFeeRecipient``: who receives the withdrawal fee (the zero address: no fee);
3. ``initialWithdrawFee``: the fee per withdrawal, in the native coin's base units;
4. ``maxFee``: the cap on every later fee, fixed for good;
5. ``prefix``: the VM's CREATE2 prefix, ``0xff`` on EVM chains and ``0x41`` on Tron, which
   every wallet copies so its deposit addresses are where its ``new`` puts forwarders.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

import attrs

from ..config import ChainConfig
from ..contracts import bytecode
from ..domain.money import to_base_units
from ..domain.records import Json
from ..domain.registry import registry_tokens
from ..domain.tokens import NATIVE, ChainKind
from ..errors import InvalidInput
from ..ops.redaction import redact

#: The CREATE2 prefix of each kind of chain, the factory's last constructor argument.
PREFIXES = {ChainKind.EVM: 0xFF, ChainKind.TRON: 0x41}
#: Above this a uint256 constructor argument cannot be encoded.
_UINT256 = 1 << 256


@attrs.frozen
class FactoryArgs:
    """The factory's constructor arguments. Addresses are 0x (20 bytes, EIP-55), also for
    Tron, whose ABI carries the same 20 bytes; fees are base units (wei, SUN)."""

    admin: str
    fee_recipient: str
    fee: int
    max_fee: int
    prefix: int

    def __attrs_post_init__(self) -> None:
        if int(self.admin, 16) == 0:
            raise InvalidInput("admin", "the zero address cannot administer the factory")
        if not 0 <= self.max_fee < _UINT256 or not 0 <= self.fee < _UINT256:
            raise InvalidInput("fee", "fees must be between 0 and 2**256 - 1 base units")
        if self.fee > self.max_fee:
            raise InvalidInput("fee", f"{self.fee} is above maxFee {self.max_fee}")
        if self.prefix not in PREFIXES.values():
            raise InvalidInput("prefix", "0xff (EVM) or 0x41 (Tron)")

    def encoded(self) -> bytes:
        """The ABI-encoded constructor arguments, as they follow the creation code."""
        from eth_abi.abi import encode

        return encode(
            ["address", "address", "uint256", "uint256", "bytes1"],
            [self.admin, self.fee_recipient, self.fee, self.max_fee, bytes([self.prefix])],
        )

    def init_code(self) -> bytes:
        """What a deployment runs: the factory's creation code and its arguments."""
        return bytecode("PaycoreFactory") + self.encoded()


def factory_args(
    config: ChainConfig, *, admin: str, fee_recipient: str, fee: Decimal, max_fee: Decimal
) -> FactoryArgs:
    """The arguments for ``config``'s chain, fees given in whole native coins (``0.001``
    ETH) and converted with the chain's native decimals; addresses 0x or, on Tron, base58."""
    return FactoryArgs(
        admin=_abi_address(config, admin, "admin"),
        fee_recipient=_abi_address(config, fee_recipient, "feeRecipient"),
        fee=to_base_units(fee, config.native_decimals),
        max_fee=to_base_units(max_fee, config.native_decimals),
        prefix=PREFIXES[config.kind],
    )


def _abi_address(config: ChainConfig, address: str, field: str) -> str:
    from .tron.address import to_evm

    if config.kind is ChainKind.TRON:
        return to_evm(address, field)
    from ..domain.tokens import to_checksum

    return to_checksum(address, field)


@attrs.frozen
class ContractDeployment:
    """One contract's part of a deployment (``PaycoreBatchPay``'s, next to the factory)."""

    address: str
    #: ``create2`` or ``create``, as :attr:`FactoryDeployment.method`.
    method: str
    tx_hash: str | None = None
    unsigned: Json | None = None
    existed: bool = False


@attrs.frozen
class FactoryDeployment:
    """What ``deploy_factory`` did: where the factory is (or will be once the unsigned
    transaction is signed and sent) and how it got there."""

    chain_id: int
    #: The factory's address (0x on EVM chains, base58 on Tron).
    address: str
    #: ``create2`` (the deterministic deployer), ``create`` (a plain deployment, address
    #: from the sender and its nonce) or ``tron`` (``CreateSmartContract``).
    method: str
    args: FactoryArgs
    #: The transaction sent, when a key signed it.
    tx_hash: str | None = None
    #: The transaction to sign elsewhere (a hardware wallet), when no key was given.
    unsigned: Json | None = None
    #: A factory with these arguments is there already: nothing was sent.
    existed: bool = False
    #: ``PaycoreBatchPay``, deployed in the same run on EVM chains; None on Tron.
    batch_pay: ContractDeployment | None = None


def deploy_factory(
    config: ChainConfig,
    args: FactoryArgs,
    *,
    key: str | None = None,
    sender: str | None = None,
    salt: bytes = bytes(32),
    create2: bool | None = None,
    timeout: float = 180.0,
) -> FactoryDeployment:
    """Deploy the factory on ``config``'s chain (its ``rpc_url``), signed with ``key``; or,
    without a key, return the unsigned deployment for ``sender`` to sign.

    EVM chains: through the deterministic CREATE2 deployer when the chain has it (``create2``
    None: when present; True: required; False: a plain deployment), with ``salt``. Tron: a
    ``CreateSmartContract`` transaction. Waits up to ``timeout`` seconds for the factory's
    code to be on chain. On EVM chains ``PaycoreBatchPay`` follows the same way, with its
    own fixed salt (``paycore.chains.evm.deploy.BATCH_PAY_SALT``)."""
    if not config.rpc_url:
        raise InvalidInput("rpc_url", f"chain {config.chain_id} has no rpc_url to deploy through")
    if key is None and sender is None:
        raise InvalidInput("from", "an unsigned deployment needs the address that will sign it")
    if config.kind is ChainKind.TRON:
        from .tron import deploy as tron_deploy
        from .tron.node import Node

        node = Node(config.rpc_url, api_key=config.api_key, rate_limit=config.rate_limit)
        return tron_deploy.deploy_factory(
            node, config.chain_id, args, key=key, sender=sender, timeout=timeout
        )
    from .evm import deploy as evm_deploy
    from .evm.rpc import Rpc

    rpc = Rpc(config.rpc_url, batch_size=config.rpc_batch)
    return evm_deploy.deploy_factory(
        rpc,
        config.chain_id,
        args,
        key=key,
        sender=sender,
        salt=salt,
        create2=create2,
        timeout=timeout,
    )


def configured_chain(
    config: ChainConfig, factory: str, batch_pay: str | None = None
) -> ChainConfig:
    """``config`` with the deployed ``factory`` (and ``batch_pay``, when deployed), and its
    tokens completed from the registry (each with symbol and decimals where known), ready
    to paste."""
    known = [meta.address for meta in registry_tokens(config.chain_id)]
    tokens = list(dict.fromkeys([*config.tokens, *known]))
    batch_pay = batch_pay or config.batch_pay
    return attrs.evolve(config, factory=factory, batch_pay=batch_pay, tokens=tuple(tokens))


def _token_entries(config: ChainConfig) -> list[Any]:
    return [
        attrs.asdict(config.token_info[t]) if t in config.token_info else t
        for t in config.tokens
        if t != NATIVE
    ]


def config_fields(config: ChainConfig) -> dict[str, Any]:
    """The fields an operator sets for a chain (``rpc_url`` redacted, since it may carry a
    key), in the form ``PAYCORE_CHAINS`` takes them."""
    fields: dict[str, Any] = {
        "name": config.name,
        "confirmations": config.confirmations,
        "rpc_url": redact(config.rpc_url or ""),
        "native_symbol": config.native_symbol,
        "native_decimals": config.native_decimals,
        "factory": config.factory,
        "tokens": _token_entries(config),
    }
    if config.batch_pay is not None:
        fields["batch_pay"] = config.batch_pay
    if config.kind is ChainKind.TRON:
        fields["fee_limit"] = config.fee_limit
    return fields


def config_python(config: ChainConfig) -> str:
    """``ChainConfig(...)`` as Python source."""
    fields = config_fields(config)
    lines = [f"ChainConfig(\n    chain_id={config.chain_id},"]
    for name, value in fields.items():
        if name == "tokens" and value:
            items = "".join(f"\n        {_py(item)}," for item in value)
            lines.append(f"    tokens=({items}\n    ),")
        elif name == "tokens":
            lines.append("    tokens=(),")
        else:
            lines.append(f"    {name}={_py(value)},")
    lines.append(")")
    return "\n".join(lines)


def _py(value: object) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_py(k)}: {_py(v)}" for k, v in value.items()) + "}"
    return json.dumps(value, ensure_ascii=False) if isinstance(value, str) else repr(value)


def config_json(config: ChainConfig) -> str:
    """The chain's entry of ``PAYCORE_CHAINS`` (a JSON object keyed by chain id)."""
    return json.dumps({str(config.chain_id): config_fields(config)}, ensure_ascii=False)


def report(config: ChainConfig, deployment: FactoryDeployment) -> list[str]:
    """What ``paycore contracts deploy`` prints: the arguments, what happened, and the
    configuration to paste."""
    from ..domain.money import from_base_units, to_text

    args = deployment.args
    coin, places = config.native_symbol, config.native_decimals
    shown = _shown_address(config)
    lines = [
        f"PaycoreFactory on chain {config.chain_id} ({config.name})",
        f"  admin          {shown(args.admin)}",
        f"  fee recipient  {shown(args.fee_recipient)}",
        f"  fee            {to_text(from_base_units(args.fee, places))} {coin} per withdrawal",
        f"  max fee        {to_text(from_base_units(args.max_fee, places))} {coin}, for good",
        f"  CREATE2 prefix 0x{args.prefix:02x}",
    ]
    how = {
        "create2": "through the deterministic CREATE2 deployer: the same address on every "
        "chain that has it, for the same arguments",
        "create": "by a plain deployment (this chain has no deterministic deployer): the "
        "address depends on the sender and its nonce",
        "tron": "by a CreateSmartContract transaction",
    }[deployment.method]
    if deployment.existed:
        lines.append(f"already deployed at {deployment.address}: nothing sent")
    elif deployment.unsigned is not None:
        lines.append(f"unsigned: sign and send this transaction ({how}); the factory will be at")
        lines.append(f"  {deployment.address}")
        lines.append(json.dumps(deployment.unsigned, indent=2))
    else:
        lines.append(f"deployed at {deployment.address} {how}")
        lines.append(f"  transaction {deployment.tx_hash}")
    batch = deployment.batch_pay
    if batch is not None:
        lines.append(f"PaycoreBatchPay {_what_happened(batch)}")
    pasted = configured_chain(config, deployment.address, None if batch is None else batch.address)
    lines += ["", "ChainConfig to paste:", config_python(pasted), ""]
    lines += ["or its PAYCORE_CHAINS entry:", config_json(pasted)]
    return lines


def _what_happened(batch: ContractDeployment) -> str:
    if batch.existed:
        return f"already deployed at {batch.address}: nothing sent"
    if batch.unsigned is not None:
        return (
            f"unsigned: sign and send this transaction after the factory's; it will be at\n"
            f"  {batch.address}\n{json.dumps(batch.unsigned, indent=2)}"
        )
    return f"deployed at {batch.address}\n  transaction {batch.tx_hash}"


def _shown_address(config: ChainConfig) -> Callable[[str], str]:
    if config.kind is ChainKind.TRON:
        from .tron.address import to_tron

        return to_tron
    return str
