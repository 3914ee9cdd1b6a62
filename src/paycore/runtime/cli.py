"""The ``paycore`` command (a click group): demo, quickstart, migrate, serve, worker, watcher,
prune, email, contracts deploy and chains check. Settings come from ``PAYCORE_*`` environment
variables (``flask paycore`` and ``litestar paycore``: from the app's gateway,
``paycore.runtime.host``); a flag given on the command line wins.

The click layer here only declares options and calls the commands' functions, which live
next to it (this module, ``chain_commands``, ``worker``, ``watcher``).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import sys
import time
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import click

from ..config import Settings
from ..domain.records import Deposit
from ..domain.tokens import NATIVE
from ..errors import PaycoreError
from ..gateway import Gateway
from ..ops.redaction import install_excepthooks, redact
from ..plugins.manager import find_storage
from . import chain_commands
from .host import CommandSource
from .serve import DEFAULT_CONNECTIONS, DEFAULT_THREADS, FRAMEWORKS

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


def migrate(settings: Settings, plugins: Sequence[object] = ()) -> int:
    """Bring the schema of the storage behind ``settings.database_url`` to the newest
    revision: the storage comes from the ``paycore_storage`` hook, as a gateway's would, so
    a storage plugin's URL migrates too; a store with no ``migrate()`` keeps no schema."""
    storage = find_storage(settings, plugins)
    try:
        upgrade = getattr(storage, "migrate", None)
        if not callable(upgrade):
            print(f"{redact(settings.database_url)} keeps no schema: nothing to migrate")
            return 0
        upgrade()
    finally:
        storage.close()
    print(f"migrated {redact(settings.database_url)}")
    return 0


def serve(
    settings: Settings,
    *,
    framework: str,
    host: str,
    port: int,
    prefix: str,
    workers: int,
    threads: int,
    connections: int = DEFAULT_CONNECTIONS,
) -> int:
    from .serve import serve as run_server

    if workers < 1 or threads < 1 or connections < 1:
        print(
            "paycore serve: --workers, --threads and --worker-connections must be at least 1",
            file=sys.stderr,
        )
        return 2
    if workers > 1 and _in_process_storage(settings.database_url):
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
            framework,
            settings,
            host=host,
            port=port,
            prefix=prefix,
            workers=workers,
            threads=threads,
            connections=connections,
        )
    return 0


def _in_process_storage(url: str) -> bool:
    text = url.strip().lower()
    return text.startswith("memory:") or (
        text.startswith("sqlite") and (text.rstrip("/").endswith(":") or ":memory:" in text)
    )


def email(gateway: Gateway, action: str, owner: str, chain_id: int | None) -> int:
    """The operator's switch for an owner's e-mail notices (docs/interface.md
    §Management calls: enabling is the operator's business); the owner stores the address with
    /setEmailNotifications first."""
    try:
        changed = gateway.management.enable_email(owner, chain_id, enabled=action == "enable")
    finally:
        gateway.close()
    for setting in changed:
        state = "on" if setting.enabled else "off"
        print(f"{setting.owner} chain {setting.chain_id}: {setting.email} -- notices {state}")
    return 0


def prune(gateway: Gateway) -> int:
    """One retention round now (docs/operations.md §Retention), as the worker runs on its
    schedule: for a deployment that runs the worker with ``--no-prune`` and prunes from cron."""
    try:
        report = gateway.retention.prune()
    finally:
        gateway.close()
    print(
        f"pruned {report.events} events, {report.deliveries} webhook deliveries, "
        f"{report.signatures} signatures, {report.challenges} challenges, "
        f"{report.idempotency_keys} idempotency keys"
    )
    return 0


# -- the click layer ---------------------------------------------------------------------

_SOURCE = "paycore.source"
_DATABASE_URL_HELP = "storage URL (env PAYCORE_DATABASE_URL); memory:// keeps everything in memory"


def _source() -> CommandSource:
    found: CommandSource = click.get_current_context().meta.get(_SOURCE, CommandSource())
    return found


def _runs(fn: Callable[..., int]) -> Callable[..., None]:
    """A command's body: its return value is the exit status (under ``flask`` and
    ``litestar`` too, whose CLIs ignore return values), a ``PaycoreError`` one line on
    stderr and status 2 -- never a traceback."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        try:
            code = fn(*args, **kwargs)
        except PaycoreError as exc:
            click.echo(f"paycore: {redact(exc.text)}", err=True)
            code = 2
        raise click.exceptions.Exit(code)

    return run


def _database_url(help: str = _DATABASE_URL_HELP) -> Callable[[Any], Any]:
    return click.option("--database-url", default=None, help=help)


def _start(source: CommandSource) -> Callable[[], None]:
    # No parameters: Litestar's CLI inspects a group's callback for ``ctx`` and ``app``.
    def start() -> None:
        install_excepthooks()  # a crash's traceback may quote a URL: print it redacted
        click.get_current_context().meta.setdefault(_SOURCE, source)

    return start


_SETTINGS = {"help_option_names": ["-h", "--help"]}


def _version() -> str:
    from .. import __version__

    return __version__


@click.group(
    name="paycore",
    context_settings=_SETTINGS,
    help="paycore: a non-custodial crypto payment gateway. Settings come from PAYCORE_* "
    "environment variables (under `flask paycore` / `litestar paycore`: from the app); a "
    "flag on the command line wins.",
)
@click.version_option(_version(), "--version", prog_name="paycore", message="%(prog)s %(version)s")
def cli() -> None:
    _start(CommandSource())()


@cli.command(
    name="quickstart",
    short_help="create an invoice on SQLite and pay it with two simulated deposits",
    help="Create an invoice on the configured storage (default SQLite) and pay it with two "
    "simulated deposits, printing each step.",
)
@_database_url("SQLAlchemy URL (env PAYCORE_DATABASE_URL); default sqlite:///paycore.sqlite3")
@_runs
def quickstart_command(database_url: str | None) -> int:
    return quickstart(_source().settings(database_url).database_url)


@cli.command(
    name="migrate",
    short_help="create or upgrade the database schema",
    help="Create or upgrade the database schema of the storage the paycore_storage hook "
    "finds for the URL (exit status 2 when no plugin handles it).",
)
@_database_url("SQLAlchemy URL (env PAYCORE_DATABASE_URL); default sqlite:///paycore.sqlite3")
@_runs
def migrate_command(database_url: str | None) -> int:
    source = _source()
    return migrate(source.settings(database_url), source.plugins())


@cli.command(
    name="serve",
    short_help="serve the HTTP interface from a small standalone app under gunicorn",
    help="Serve the HTTP interface from a small standalone app under gunicorn. paymentUrl "
    "is this server's checkout page at the address a request came in by, unless "
    "PAYCORE_PUBLIC_URL or PAYCORE_CHECKOUT_URL says otherwise.",
)
@click.option(
    "--framework",
    type=click.Choice(FRAMEWORKS),
    default="litestar",
    envvar="PAYCORE_FRAMEWORK",
    help="litestar or flask, both in uvicorn workers under gunicorn (flask's requests on "
    "threads behind the event loop); env PAYCORE_FRAMEWORK; default litestar",
)
@click.option(
    "--workers",
    type=int,
    default=1,
    envvar="PAYCORE_WORKERS",
    help="worker processes, each with its own gateway and database connections; "
    "env PAYCORE_WORKERS; default 1 (about one per core)",
)
@click.option(
    "--threads",
    type=int,
    default=DEFAULT_THREADS,
    envvar="PAYCORE_THREADS",
    help="flask only: threads per worker running requests (idle connections and "
    f"WebSockets hold none); env PAYCORE_THREADS; default {DEFAULT_THREADS}",
)
@click.option(
    "--worker-connections",
    "connections",
    type=int,
    default=DEFAULT_CONNECTIONS,
    envvar="PAYCORE_WORKER_CONNECTIONS",
    help="connections (WebSockets and idle ones included) past which a worker answers "
    "HTTP requests 503; "
    f"env PAYCORE_WORKER_CONNECTIONS; default {DEFAULT_CONNECTIONS}",
)
@click.option("--host", default="127.0.0.1", envvar="PAYCORE_HOST", help="env PAYCORE_HOST")
@click.option("--port", type=int, default=8000, envvar="PAYCORE_PORT", help="env PAYCORE_PORT")
@click.option(
    "--prefix", default="/paycore", envvar="PAYCORE_PREFIX", help="mount path; env PAYCORE_PREFIX"
)
@_database_url()
@_runs
def serve_command(
    framework: str,
    workers: int,
    threads: int,
    connections: int,
    host: str,
    port: int,
    prefix: str,
    database_url: str | None,
) -> int:
    # paymentUrl needs no override: the page is served by this very server, and an invoice
    # keeps the address its creating request came in by (or PAYCORE_PUBLIC_URL's).
    return serve(
        _source().settings(database_url),
        framework=framework,
        host=host,
        port=port,
        prefix=prefix,
        workers=workers,
        threads=threads,
        connections=connections,
    )


@cli.command(
    name="worker",
    short_help="deliver webhooks, expire invoices, watch chains, refresh prices, prune",
    help="Deliver webhooks, expire overdue invoices, watch chains, refresh prices and prune "
    "old rows until SIGTERM or SIGINT. Other settings come from PAYCORE_* environment "
    "variables (e.g. PAYCORE_WEBHOOK_RETRY_SCHEDULE, PAYCORE_WORKER_POLL_INTERVAL).",
)
@_database_url("SQLAlchemy URL (env PAYCORE_DATABASE_URL); default sqlite:///paycore.sqlite3")
@click.option("--no-dispatch", is_flag=True, help="do not deliver webhooks")
@click.option("--no-sweep", is_flag=True, help="do not expire invoices")
@click.option("--no-watch", is_flag=True, help="do not scan chains for deposits")
@click.option("--no-prices", is_flag=True, help="do not refresh prices")
@click.option("--no-prune", is_flag=True, help="do not delete old events and delivery logs")
@click.option(
    "--signals",
    multiple=True,
    metavar="MODULE",
    help="import MODULE (repeatable; MODULE:FACTORY also calls FACTORY(), e.g. an app "
    "factory), then call the handlers it registered: @paycore.on, and gateway.on or "
    "connect_signals on gateways of this worker's database",
)
@click.option("--no-signals", is_flag=True, help="call no host handlers")
@click.option("--log-level", default="INFO", help="logging level on stderr; default INFO")
@_runs
def worker_command(**options: Any) -> int:
    from .worker import WorkerArgs, start

    return start(WorkerArgs(**options), _source().gateway)


@cli.command(
    name="watcher",
    short_help="watch every configured EVM chain for deposits (no other worker loop)",
    help="Watch every configured EVM chain (PAYCORE_CHAINS) for deposits until SIGTERM or "
    "SIGINT, without the worker's other loops.",
)
@_database_url()
@click.option("--log-level", default="INFO", help="logging level on stderr; default INFO")
@_runs
def watcher_command(database_url: str | None, log_level: str) -> int:
    from .watcher import watch

    source = _source()
    return watch(source.settings(database_url), log_level, source.plugins())


@cli.command(
    name="prune",
    short_help="delete old events, delivery logs, signatures and challenges once",
    help="Delete old events, delivery logs, signatures and challenges once: one retention "
    "round, for a deployment that runs the worker with --no-prune and prunes from cron.",
)
@_database_url()
@_runs
def prune_command(database_url: str | None) -> int:
    return prune(_source().gateway(database_url))


@cli.command(
    name="email",
    short_help="turn an owner's deposit and withdrawal e-mails on or off (operator)",
    help="Turn an owner's deposit and withdrawal e-mails on or off (the operator's switch; "
    "the owner stores the address with /setEmailNotifications first).",
)
@click.argument("action", type=click.Choice(("enable", "disable")))
@click.argument("owner")
@click.option("--chain-id", type=int, default=None, help="one chain only; default every chain")
@_database_url()
@_runs
def email_command(action: str, owner: str, chain_id: int | None, database_url: str | None) -> int:
    return email(_source().gateway(database_url), action, owner, chain_id)


@cli.command(
    name="demo",
    short_help="the whole gateway on a local anvil chain, from invoice to withdrawal",
    help="The whole gateway on a local anvil chain: a Flask shop's invoice paid in USDT, "
    "events, a signed webhook, the wallet deployed and the money withdrawn.",
)
@click.option(
    "--anvil",
    default=None,
    envvar="PAYCORE_ANVIL",
    help="the anvil binary (env PAYCORE_ANVIL); default node_modules/.bin/anvil "
    "(installed by `npm ci`), then PATH",
)
@_runs
def demo_command(anvil: str | None) -> int:
    from ..demo import run_demo

    return run_demo(anvil)


@cli.group(
    name="contracts",
    short_help="deploy paycore's contracts",
    help="Deploy paycore's contracts.",
    context_settings=_SETTINGS,
)
def contracts() -> None:
    pass


@contracts.command(
    name="deploy",
    short_help="deploy PaycoreFactory (and PaycoreBatchPay) and print the ChainConfig",
    help="Deploy PaycoreFactory (EVM: through the deterministic CREATE2 deployer, followed by "
    "PaycoreBatchPay at its one fixed address) with the key "
    "in $PAYCORE_DEPLOYER_KEY (or --key-env), or print the unsigned deployment for a hardware "
    "wallet (--unsigned --from), then print the ChainConfig to paste. The node is the chain's "
    "configured rpc_url (PAYCORE_CHAINS) or --rpc-url.",
)
@click.option("--chain-id", type=int, required=True, help="the chain to deploy on")
@click.option("--rpc-url", default=None, help="the node; default the chain's rpc_url")
@click.option(
    "--max-fee",
    required=True,
    help="the cap on the withdrawal fee, in whole native coins (e.g. 0.01), for good",
)
@click.option("--fee", default="0", help="the withdrawal fee now, in whole native coins; default 0")
@click.option("--admin", default=None, help="who may change the fee; default the sender")
@click.option("--fee-recipient", default=None, help="who receives the fee; default the admin")
@click.option(
    "--key-env",
    default=chain_commands.KEY_ENV,
    help="the environment variable holding the deployer's private key; "
    f"default {chain_commands.KEY_ENV}",
)
@click.option(
    "--unsigned",
    is_flag=True,
    help="print the unsigned transaction for --from to sign instead of sending it",
)
@click.option("--from", "sender", default=None, help="the signer's address")
@click.option("--salt", default="0", help="EVM CREATE2 salt, hex up to 32 bytes; default 0")
@click.option(
    "--create2",
    type=click.Choice(("auto", "require", "never")),
    default="auto",
    help="EVM: use the deterministic deployer when the chain has it (auto), insist on it, "
    "or deploy plainly",
)
@click.option(
    "--timeout", type=float, default=180.0, help="seconds to wait for the factory on chain"
)
@_runs
def contracts_deploy_command(**options: Any) -> int:
    return chain_commands.contracts_deploy(_source().settings(), **options)


@cli.group(
    name="chains",
    short_help="check the configured chains",
    help="Check the configured chains.",
    context_settings=_SETTINGS,
)
def chains() -> None:
    pass


@chains.command(
    name="check",
    short_help="node, chain id, factory, tokens and watcher of each chain; status 1 on a problem",
    help="Check the node, chain id, factory, tokens and watcher of each configured chain; "
    "exit status 1 on any problem.",
)
@click.option(
    "--chain-id",
    "chain_ids",
    type=int,
    multiple=True,
    help="check this chain only (repeatable); default every chain with an rpc_url",
)
@click.option(
    "--max-lag", type=int, default=None, help="blocks the watcher may be behind; default 1000"
)
@_database_url()
@click.option("--no-storage", is_flag=True, help="leave the watchers' cursors out")
@click.option("--timeout", type=float, default=10.0, help="seconds per node request")
@_runs
def chains_check_command(
    chain_ids: tuple[int, ...],
    max_lag: int | None,
    database_url: str | None,
    no_storage: bool,
    timeout: float,
) -> int:
    source = _source()
    settings = source.settings(database_url)
    gateway = None if no_storage else Gateway(settings, plugins=source.plugins())
    return chain_commands.chains_check(
        settings, gateway, chain_ids=chain_ids, max_lag=max_lag, timeout=timeout
    )


def hosted_cli(source: CommandSource) -> click.Group:
    """The same commands for a host app's CLI (``flask paycore``, ``litestar paycore``),
    starting from ``source``: the app's gateway settings and plugins."""
    return click.Group(
        name="paycore",
        # Copies: a host CLI may rewrap the commands' callbacks (Litestar injects its app).
        commands=copy.deepcopy(cli.commands),
        callback=_start(source),
        help="paycore's commands, starting from this app's gateway settings and plugins "
        "(flask: PAYCORE_* app.config keys over the environment); a flag on the command line "
        "wins.",
        short_help="paycore's commands (migrate, worker, prune, ...) on this app's settings",
        context_settings=_SETTINGS,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """The ``paycore`` console script and ``python -m paycore``: the exit status, with
    usage errors (status 2) shown as click shows them."""
    try:
        code: int = cli.main(args=argv, prog_name="paycore", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        click.echo("Aborted!", err=True)
        return 1
    return code or 0


if __name__ == "__main__":
    raise SystemExit(main())
