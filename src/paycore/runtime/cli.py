"""The ``paycore`` command: demo, quickstart, migrate, serve, worker, prune, email, contracts
deploy and chains check. Every option also reads its ``PAYCORE_*`` environment variable; a
flag given on the command line wins."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from decimal import Decimal

from ..config import Settings
from ..domain.records import Deposit
from ..domain.tokens import NATIVE
from ..errors import PaycoreError
from ..gateway import Gateway
from ..ops.redaction import install_excepthooks, redact
from .chain_commands import add_chain_commands

DEV_CHAIN = 31337
MERCHANT = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
BUYER = "0x1111111111111111111111111111111111111111"
DEPOSIT_ADDRESS = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"


def quickstart(database_url: str) -> int:
    """Create an invoice on the embedded SQLite default, pay it in two parts, show each step."""
    eth = f"{DEV_CHAIN}:{NATIVE}"
    gateway = Gateway(Settings(database_url=database_url, prices={eth: "2000"}))
    say = _printer()
    say(f"storage: {redact(database_url)}; 1 ETH = 2000 {gateway.settings.vs_currency.upper()}")
    invoice = gateway.create_invoice(
        MERCHANT,
        {
            "value": "25",
            "chainId": DEV_CHAIN,
            "description": "T-shirt, size M",
            "acceptedTokens": [eth],
            "address": DEPOSIT_ADDRESS,
        },
    )
    say(f"created invoice {invoice.guid}: {invoice.value} USD to {invoice.address}")
    say(f"  pay at {gateway.invoice_wire(invoice)['paymentUrl']}")
    for n, amount in enumerate(("0.005", "0.0075"), start=1):
        deposit = Deposit(
            chain_id=DEV_CHAIN,
            tx_hash="0x" + f"{time.time_ns():x}{n}".rjust(64, "0"),
            log_index=-1,
            token=NATIVE,
            from_=BUYER,
            to=invoice.address,
            amount=Decimal(amount),
            timestamp=gateway.now(),
        )
        changes = gateway.record_deposit(deposit)
        current = changes[-1]
        say(
            f"deposit {n}: {amount} ETH -> status {current.status.value}, "
            f"paid {current.paid_amount} of {current.value} USD"
        )
    final = gateway.get_invoice(invoice.guid)
    gateway.close()
    say(f"invoice {final.guid} is {final.status.value}")
    return 0 if final.status.value == "paid" else 1


def _printer() -> Callable[[str], None]:
    step = 0

    def say(text: str) -> None:
        nonlocal step
        step += 1
        print(f"[{step}] {text}", flush=True)

    return say


def migrate(database_url: str) -> int:
    from paycore_storage import migrate as run_migrations

    run_migrations(database_url)
    print(f"migrated {redact(database_url)}")
    return 0


def serve(args: argparse.Namespace) -> int:
    from .serve import serve as run_server

    overrides = {"database_url": args.database_url} if args.database_url else {}
    if "PAYCORE_CHECKOUT_URL" not in os.environ:
        # The page is served by this very server: paymentUrl must point at it.
        host = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
        overrides["checkout_url"] = f"http://{host}:{args.port}{args.prefix.rstrip('/')}/checkout"
    settings = Settings.from_env(**overrides)
    if args.workers < 1 or args.threads < 1:
        print("paycore serve: --workers and --threads must be at least 1", file=sys.stderr)
        return 2
    if args.workers > 1 and _in_process_storage(settings.database_url):
        # Each worker would hold a store of its own: an invoice made in one is unknown
        # to the next request, which another worker may serve.
        print(
            "paycore serve: an in-memory database lives in one process; "
            "use --workers 1 or a database file or server",
            file=sys.stderr,
        )
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        run_server(
            args.framework,
            settings,
            host=args.host,
            port=args.port,
            prefix=args.prefix,
            workers=args.workers,
            threads=args.threads,
        )
    return 0


def _in_process_storage(url: str) -> bool:
    text = url.strip().lower()
    return text.startswith("memory:") or (
        text.startswith("sqlite") and (text.rstrip("/").endswith(":") or ":memory:" in text)
    )


def _env(name: str, default: str) -> str:
    return os.environ.get("PAYCORE_" + name, default)


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from .serve import DEFAULT_THREADS, FRAMEWORKS

    cmd = sub.add_parser(
        "serve", help="serve the HTTP interface from a small standalone app under gunicorn"
    )
    cmd.add_argument(
        "--framework",
        choices=FRAMEWORKS,
        default=_env("FRAMEWORK", "litestar"),
        help="litestar (uvicorn workers) or flask (threaded workers), both under gunicorn; "
        "env PAYCORE_FRAMEWORK; default litestar",
    )
    cmd.add_argument(
        "--workers",
        type=int,
        default=int(_env("WORKERS", "1")),
        help="worker processes, each with its own gateway and database connections; "
        "env PAYCORE_WORKERS; default 1 (about one per core)",
    )
    cmd.add_argument(
        "--threads",
        type=int,
        default=int(_env("THREADS", str(DEFAULT_THREADS))),
        help=f"flask only: threads per worker (each holds one request or WebSocket); "
        f"env PAYCORE_THREADS; default {DEFAULT_THREADS}",
    )
    cmd.add_argument("--host", default=_env("HOST", "127.0.0.1"), help="env PAYCORE_HOST")
    cmd.add_argument("--port", type=int, default=int(_env("PORT", "8000")), help="env PAYCORE_PORT")
    cmd.add_argument(
        "--prefix", default=_env("PREFIX", "/paycore"), help="mount path; env PAYCORE_PREFIX"
    )
    cmd.add_argument(
        "--database-url",
        default=None,
        help="storage URL (env PAYCORE_DATABASE_URL); memory:// keeps everything in memory",
    )


def email(args: argparse.Namespace) -> int:
    """The operator's switch for an owner's e-mail notices (docs/interface.md
    §Management calls: enabling is the operator's business); the owner stores the address with
    /setEmailNotifications first."""
    overrides = {"database_url": args.database_url} if args.database_url else {}
    gateway = Gateway(Settings.from_env(**overrides))
    try:
        changed = gateway.management.enable_email(
            args.owner, args.chain_id, enabled=args.action == "enable"
        )
    finally:
        gateway.close()
    for setting in changed:
        state = "on" if setting.enabled else "off"
        print(f"{setting.owner} chain {setting.chain_id}: {setting.email} -- notices {state}")
    return 0


def prune(args: argparse.Namespace) -> int:
    """One retention round now (docs/operations.md §Retention), as the worker runs on its
    schedule: for a deployment that runs the worker with ``--no-prune`` and prunes from cron."""
    overrides = {"database_url": args.database_url} if args.database_url else {}
    gateway = Gateway(Settings.from_env(**overrides))
    try:
        report = gateway.retention.prune()
    finally:
        gateway.close()
    print(
        f"pruned {report.events} events, {report.deliveries} webhook deliveries, "
        f"{report.signatures} signatures, {report.challenges} challenges"
    )
    return 0


def _add_email(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = sub.add_parser(
        "email", help="turn an owner's deposit and withdrawal e-mails on or off (operator)"
    )
    cmd.add_argument("action", choices=("enable", "disable"))
    cmd.add_argument("owner", help="the owner's address")
    cmd.add_argument(
        "--chain-id", type=int, default=None, help="one chain only; default every chain"
    )
    cmd.add_argument("--database-url", default=None, help="storage URL (env PAYCORE_DATABASE_URL)")


def _add_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = sub.add_parser(
        "demo",
        help="the whole gateway on a local anvil chain: a Flask shop's invoice paid in USDT, "
        "events, a signed webhook, the wallet deployed and the money withdrawn",
    )
    cmd.add_argument(
        "--anvil",
        default=os.environ.get("PAYCORE_ANVIL"),
        help="the anvil binary (env PAYCORE_ANVIL); default node_modules/.bin/anvil "
        "(installed by `npm ci`), then PATH",
    )


def main(argv: Sequence[str] | None = None) -> int:
    install_excepthooks()  # a crash's traceback may quote a URL: print it redacted
    parser = argparse.ArgumentParser(prog="paycore", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, helptext in (
        ("quickstart", "create an invoice on SQLite and pay it with two simulated deposits"),
        ("migrate", "create or upgrade the database schema"),
    ):
        cmd = sub.add_parser(name, help=helptext)
        cmd.add_argument(
            "--database-url",
            default=None,
            help="SQLAlchemy URL (env PAYCORE_DATABASE_URL); default sqlite:///paycore.sqlite3",
        )
    _add_serve(sub)
    cmd = sub.add_parser(
        "prune", help="delete old events, delivery logs, signatures and challenges once"
    )
    cmd.add_argument("--database-url", default=None, help="storage URL (env PAYCORE_DATABASE_URL)")
    _add_email(sub)
    _add_demo(sub)
    add_chain_commands(sub)
    sub.add_parser(
        "worker",
        add_help=False,
        help="deliver webhooks, expire invoices, watch chains, refresh prices, prune "
        "(paycore worker --help)",
    )
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "worker":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if args.command == "worker":
            from .worker import main as worker_main

            return worker_main(extra)
        if args.command == "serve":
            return serve(args)
        if args.command == "email":
            return email(args)
        if args.command == "prune":
            return prune(args)
        if args.command in ("contracts", "chains"):
            run: Callable[[argparse.Namespace], int] = args.run
            return run(args)
        if args.command == "demo":
            from ..demo import run_demo

            return run_demo(args.anvil)
        database_url = args.database_url or Settings.from_env().database_url
        if args.command == "quickstart":
            return quickstart(database_url)
        return migrate(database_url)
    except PaycoreError as exc:
        print(f"paycore: {redact(exc.text)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
