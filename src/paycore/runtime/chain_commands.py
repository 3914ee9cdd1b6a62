"""``paycore contracts deploy`` and ``paycore chains check``: argument parsing and printing
only; the work is ``paycore.chains.deploy`` and ``paycore.chains.health``."""

from __future__ import annotations

import argparse
import os
import sys
from decimal import Decimal

from ..config import ChainConfig, Settings
from ..domain.money import parse_amount
from ..errors import InvalidInput

#: Where ``contracts deploy`` reads the deployer's private key from, unless told otherwise.
KEY_ENV = "PAYCORE_DEPLOYER_KEY"


def add_chain_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    contracts = sub.add_parser("contracts", help="deploy paycore's contracts")
    actions = contracts.add_subparsers(dest="action", required=True)
    deploy = actions.add_parser(
        "deploy",
        help="deploy PaycoreFactory (EVM: through the deterministic CREATE2 deployer) and "
        "print the ChainConfig to paste",
        description="Deploys PaycoreFactory with the key in $PAYCORE_DEPLOYER_KEY (or "
        "--key-env), or prints the unsigned deployment for a hardware wallet (--unsigned "
        "--from). The node is the chain's configured rpc_url (PAYCORE_CHAINS) or --rpc-url.",
    )
    deploy.add_argument("--chain-id", type=int, required=True, help="the chain to deploy on")
    deploy.add_argument("--rpc-url", default=None, help="the node; default the chain's rpc_url")
    deploy.add_argument(
        "--max-fee",
        required=True,
        help="the cap on the withdrawal fee, in whole native coins (e.g. 0.01), for good",
    )
    deploy.add_argument(
        "--fee", default="0", help="the withdrawal fee now, in whole native coins; default 0"
    )
    deploy.add_argument("--admin", default=None, help="who may change the fee; default the sender")
    deploy.add_argument(
        "--fee-recipient", default=None, help="who receives the fee; default the admin"
    )
    deploy.add_argument(
        "--key-env",
        default=KEY_ENV,
        help=f"the environment variable holding the deployer's private key; default {KEY_ENV}",
    )
    deploy.add_argument(
        "--unsigned",
        action="store_true",
        help="print the unsigned transaction for --from to sign instead of sending it",
    )
    deploy.add_argument("--from", dest="sender", default=None, help="the signer's address")
    deploy.add_argument(
        "--salt", default="0", help="EVM CREATE2 salt, hex up to 32 bytes; default 0"
    )
    deploy.add_argument(
        "--create2",
        choices=("auto", "require", "never"),
        default="auto",
        help="EVM: use the deterministic deployer when the chain has it (auto), insist on "
        "it, or deploy plainly",
    )
    deploy.add_argument(
        "--timeout", type=float, default=180.0, help="seconds to wait for the factory on chain"
    )
    deploy.set_defaults(run=contracts_deploy)

    chains = sub.add_parser("chains", help="check the configured chains")
    checks = chains.add_subparsers(dest="action", required=True)
    check = checks.add_parser(
        "check",
        help="node, chain id, factory, tokens and watcher of each configured chain; "
        "exit status 1 on any problem",
    )
    check.add_argument(
        "--chain-id",
        type=int,
        action="append",
        default=[],
        help="check this chain only (repeatable); default every chain with an rpc_url",
    )
    check.add_argument(
        "--max-lag", type=int, default=None, help="blocks the watcher may be behind; default 1000"
    )
    check.add_argument(
        "--database-url", default=None, help="storage URL (env PAYCORE_DATABASE_URL)"
    )
    check.add_argument("--no-storage", action="store_true", help="leave the watchers' cursors out")
    check.add_argument("--timeout", type=float, default=10.0, help="seconds per node request")
    check.set_defaults(run=chains_check)


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


def contracts_deploy(args: argparse.Namespace) -> int:
    from ..chains.deploy import deploy_factory, factory_args, report
    from ..domain.tokens import ChainKind

    settings = Settings.from_env()
    config = _chain(settings, args.chain_id, args.rpc_url)
    key = None
    if not args.unsigned:
        key = os.environ.get(args.key_env, "").strip() or None
        if key is None:
            print(
                f"paycore contracts deploy: set {args.key_env} to the deployer's private key, "
                "or pass --unsigned --from ADDRESS",
                file=sys.stderr,
            )
            return 2
    elif args.sender is None:
        print("paycore contracts deploy: --unsigned needs --from ADDRESS", file=sys.stderr)
        return 2
    sender = args.sender
    if key is not None:
        if config.kind is ChainKind.TRON:
            from ..chains.tron.deploy import account_of as tron_account

            sender = tron_account(key)[1]
        else:
            from ..chains.evm.deploy import account_of

            sender = account_of(key)
    admin = args.admin or sender
    fee = parse_amount(args.fee, "fee")
    max_fee: Decimal = parse_amount(args.max_fee, "max-fee")
    factory = factory_args(
        config,
        admin=admin,
        fee_recipient=args.fee_recipient or admin,
        fee=fee,
        max_fee=max_fee,
    )
    create2 = {"auto": None, "require": True, "never": False}[args.create2]
    deployment = deploy_factory(
        config,
        factory,
        key=key,
        sender=args.sender,
        salt=_salt(args.salt),
        create2=create2,
        timeout=args.timeout,
    )
    print("\n".join(report(config, deployment)))
    return 0


def chains_check(args: argparse.Namespace) -> int:
    from ..chains.health import DEFAULT_MAX_LAG, check_chains

    overrides = {"database_url": args.database_url} if args.database_url else {}
    settings = Settings.from_env(**overrides)
    gateway = None
    if not args.no_storage:
        from ..gateway import Gateway

        gateway = Gateway(settings)
    try:
        findings = check_chains(
            settings,
            gateway.chain_ledger if gateway is not None else None,
            chain_ids=args.chain_id,
            max_lag=DEFAULT_MAX_LAG if args.max_lag is None else args.max_lag,
            timeout=args.timeout,
        )
    finally:
        if gateway is not None:
            gateway.close()
    for found in findings:
        print(found.line(), flush=True)
    return 0 if all(f.ok for f in findings) else 1
