"""``paycore contracts deploy`` and ``paycore chains check``: checking the options and printing
only; the work is ``paycore.chains.deploy`` and ``paycore.chains.health``, the options are
declared in ``paycore.runtime.cli``."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING

from ..config import ChainConfig, Settings
from ..domain.money import parse_amount
from ..errors import InvalidInput

if TYPE_CHECKING:
    from ..gateway import Gateway

#: Where ``contracts deploy`` reads the deployer's private key from, unless told otherwise.
KEY_ENV = "PAYCORE_DEPLOYER_KEY"


def _chain(settings: Settings, chain_id: int, rpc_url: str | None) -> ChainConfig:
    import attrs

    config = settings.chains.get(chain_id) or ChainConfig(chain_id, f"chain-{chain_id}")
    if rpc_url:
        config = attrs.evolve(config, rpc_url=rpc_url)
    return config


def _salt(text: str) -> bytes:
    digits = text.removeprefix("0x")
    if not digits or len(digits) > 64 or any(c not in "0123456789abcdefABCDEF" for c in digits):
        raise InvalidInput("salt", "hex, at most 32 bytes")
    return bytes.fromhex(digits.rjust(64, "0"))


def contracts_deploy(
    settings: Settings,
    *,
    chain_id: int,
    rpc_url: str | None,
    max_fee: str,
    fee: str = "0",
    admin: str | None = None,
    fee_recipient: str | None = None,
    key_env: str = KEY_ENV,
    unsigned: bool = False,
    sender: str | None = None,
    salt: str = "0",
    create2: str = "auto",
    timeout: float = 180.0,
) -> int:
    from ..chains.deploy import deploy_factory, factory_args, report
    from ..domain.tokens import ChainKind

    config = _chain(settings, chain_id, rpc_url)
    key = None
    if not unsigned:
        key = os.environ.get(key_env, "").strip() or None
        if key is None:
            print(
                f"paycore contracts deploy: set {key_env} to the deployer's private key, "
                "or pass --unsigned --from ADDRESS",
                file=sys.stderr,
            )
            return 2
    elif sender is None:
        print("paycore contracts deploy: --unsigned needs --from ADDRESS", file=sys.stderr)
        return 2
    given_sender = sender
    if key is not None:
        if config.kind is ChainKind.TRON:
            from ..chains.tron.deploy import account_of as tron_account

            sender = tron_account(key)[1]
        else:
            from ..chains.evm.deploy import account_of

            sender = account_of(key)
    if sender is None:  # not reached: a key gives the sender, --unsigned needs --from
        raise InvalidInput("from", "the signer's address")
    admin = admin or sender
    fee_now: Decimal = parse_amount(fee, "fee")
    fee_cap: Decimal = parse_amount(max_fee, "max-fee")
    factory = factory_args(
        config,
        admin=admin,
        fee_recipient=fee_recipient or admin,
        fee=fee_now,
        max_fee=fee_cap,
    )
    deployment = deploy_factory(
        config,
        factory,
        key=key,
        sender=given_sender,
        salt=_salt(salt),
        create2={"auto": None, "require": True, "never": False}[create2],
        timeout=timeout,
    )
    print("\n".join(report(config, deployment)))
    return 0


def chains_check(
    settings: Settings,
    gateway: Gateway | None,
    *,
    chain_ids: Sequence[int] = (),
    max_lag: int | None = None,
    timeout: float = 10.0,
) -> int:
    """``gateway`` None (``--no-storage``) leaves the watchers' cursors out."""
    from ..chains.health import DEFAULT_MAX_LAG, check_chains

    try:
        findings = check_chains(
            settings,
            gateway.chain_ledger if gateway is not None else None,
            chain_ids=list(chain_ids),
            max_lag=DEFAULT_MAX_LAG if max_lag is None else max_lag,
            timeout=timeout,
        )
    finally:
        if gateway is not None:
            gateway.close()
    for found in findings:
        print(found.line(), flush=True)
    return 0 if all(f.ok for f in findings) else 1
