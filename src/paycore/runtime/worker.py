"""The background worker: the webhook dispatcher, the expiry sweeper, the chain watchers (and
their payout pass), the price refresher and the pruner (``paycore.ops.retention``).

Three ways to run it, all the same loops:

- ``paycore worker --database-url URL`` (or ``python -m paycore.runtime.worker``): its own process,
  stopped by SIGTERM or SIGINT. Start as many as you like against one database: they share
  the deliveries and the host-signal handlers through storage leases, and expiry is
  idempotent. ``--signals MODULE[:FACTORY]`` imports the shop's handlers; the worker serves
  those of ``paycore.on`` and of every gateway in the process on its database, and logs
  their names at start.
- In a thread of the web app: ``threading.Thread(target=run_worker, args=(gateway,),
  kwargs={"stop_event": stop}).start()``, then ``stop.set()`` and ``join()`` at shutdown.
- In an anyio/ASGI lifespan: ``task_group.start_soon(worker_task, gateway)``; cancelling
  the task group (or setting the optional ``anyio.Event``) stops it cleanly.

Storage and HTTP are blocking in this sync core, so the loops run on threads even under
anyio; ``worker_task`` only bridges cancellation to them. Embedded in the app's process the
worker also hooks a notifier into the gateway, so a change committed there wakes the
dispatcher at once instead of at its next poll.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from types import FrameType

import anyio
import attrs

from ..chains import WatchingBackend
from ..domain.records import Json
from ..errors import PaycoreError, StorageUnavailable
from ..events.signals import Signals, every_registry, hosted_on
from ..gateway import Gateway
from ..notify import BaseNotifier
from ..ops.outages import LoopGuard
from ..ops.redaction import configure_logging
from ..webhooks.dispatcher import Dispatcher

log = logging.getLogger("paycore.worker")

#: Seconds past ``webhook_timeout`` the worker's threads get to finish after a stop: the
#: process is gone within ``webhook_timeout`` + 5 s of SIGTERM (the rest is exiting).
SHUTDOWN_GRACE = 3.0


class _WakeDispatcher(BaseNotifier):
    """A notifier that nudges the in-process dispatcher after every committed change."""

    name = "webhook-dispatcher-wake"

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    def invoice_changed(self, owner: str, payload: Json) -> None:
        self.dispatcher.wake()


def sweep_expired(gateway: Gateway, halt: threading.Event) -> None:
    """Expire overdue invoices every ``worker_sweep_interval`` so their events need not
    wait for someone to read them (docs/architecture.md §Events). While storage is down the
    rounds back off (``paycore.ops.outages``) and resume once it answers."""
    batch = 500
    settings = gateway.settings
    guard = LoopGuard.from_settings(
        "expiry sweep", log, settings, pace=min(settings.worker_poll_interval, 1.0)
    )
    while not halt.is_set():
        try:
            expired = gateway.expire_due(batch)
        except StorageUnavailable as exc:
            halt.wait(guard.failed(exc))
            continue
        except Exception:  # a bug: keep sweeping, the traceback says where
            log.exception("expiry sweep failed")
            expired = 0
        else:
            guard.succeeded()
        if expired < batch:  # a full batch means more are due: go again at once
            halt.wait(settings.worker_sweep_interval)


def confirm_payouts(gateway: Gateway, halt: threading.Event) -> None:
    """The payout pass: every ``worker_poll_interval``, read again the batch transactions a
    confirm was given before they were mined and settle those now mined
    (``Payouts.settle_watched``: the confirm's own rules and events, once), so a merchant
    need not call confirm twice. While storage is down the rounds back off and resume."""
    settings = gateway.settings
    batch = 200
    guard = LoopGuard.from_settings(
        "payout pass", log, settings, pace=min(settings.worker_poll_interval, 1.0)
    )
    while not halt.is_set():
        done = 0
        try:
            done = gateway.payouts.settle_watched(batch)
        except StorageUnavailable as exc:
            halt.wait(guard.failed(exc))
            continue
        except Exception:  # a bug or a node error: keep the schedule, the traceback says where
            log.exception("payout pass failed")
        else:
            guard.succeeded()
        if done < batch:
            halt.wait(settings.worker_poll_interval)


def prune_on_schedule(gateway: Gateway, halt: threading.Event) -> None:
    """A retention round (``Gateway.retention``) at once and then every
    ``worker_prune_interval``, so the outbox, the delivery log, remembered signatures and
    challenges stop growing. While storage is down the rounds back off and resume."""
    settings = gateway.settings
    guard = LoopGuard.from_settings(
        "prune", log, settings, pace=min(settings.worker_prune_interval, 1.0)
    )
    while not halt.is_set():
        try:
            report = gateway.retention.prune(halt)
        except StorageUnavailable as exc:
            halt.wait(guard.failed(exc))
            continue
        except Exception:  # a bug: keep the schedule, the traceback says where
            log.exception("prune round failed")
        else:
            guard.succeeded()
            if report.total:
                log.info(
                    "pruned %d events, %d webhook deliveries, %d signatures, %d challenges, "
                    "%d idempotency keys",
                    report.events,
                    report.deliveries,
                    report.signatures,
                    report.challenges,
                    report.idempotency_keys,
                )
        halt.wait(settings.worker_prune_interval)


def run_worker(
    gateway: Gateway,
    *,
    stop_event: threading.Event,
    dispatch: bool = True,
    sweep: bool = True,
    watch: bool = True,
    prices: bool = True,
    prune: bool = True,
    signals: bool = True,
    handlers: Sequence[Signals] = (),
) -> list[str]:
    """Run the host signal consumer (``paycore.events.signals``), the dispatcher, the
    sweeper, the chain watchers, the price refresher (``paycore.prices.refresher``) and the
    pruner until ``stop_event`` is set; blocks. The consumer calls the gateway's handlers,
    ``paycore.on``'s and those of ``handlers`` (the host's own gateways, ``start``).

    In-flight POSTs are allowed to finish before this returns, but not for ever:
    ``webhook_timeout`` bounds each POST as a whole (a receiver that drips its answer a byte
    at a time included), and an RPC call may be retried for ``rpc_max_wait``. So the
    threads get ``webhook_timeout`` + :data:`SHUTDOWN_GRACE` seconds in all; the names of
    those still running then are returned (they are daemon threads, left to die with the
    process). What they held is leased, not lost: a delivery's lease lapses and another
    worker (or the next start) sends it again with the same webhook-id. If a loop dies of
    an unexpected error the others are stopped too and the error is raised here, so a
    supervisor sees the worker fail rather than idle.
    """
    dispatcher = gateway.webhooks.dispatcher()
    waker = _WakeDispatcher(dispatcher)
    halt_sweep = threading.Event()
    halt_prices = threading.Event()
    halt_prune = threading.Event()
    halt_signals = threading.Event()
    crashed: list[BaseException] = []

    def guarded(loop: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                loop()
            except BaseException as exc:
                log.exception("worker loop crashed")
                crashed.append(exc)
                stop_event.set()

        return run

    loops: list[Callable[[], None]] = []
    if dispatch:
        loops.append(dispatcher.run)
        gateway.add_notifier(waker)
    if sweep:
        loops.append(functools.partial(sweep_expired, gateway, halt_sweep))
        loops.append(functools.partial(gateway.subscriptions.run, halt_sweep))
    if prices:
        loops.append(functools.partial(gateway.price_refresher.run, halt_prices))
    if prune:
        loops.append(functools.partial(prune_on_schedule, gateway, halt_prune))
    if signals:
        consumer = gateway.signal_consumer(*handlers)
        interval = gateway.settings.worker_poll_interval
        loops.append(functools.partial(consumer.run, halt_signals, interval))
    if watch:
        # One loop per backend object: a backend serving several chains runs them all.
        backends = {id(b): b for b in gateway.chains.values() if isinstance(b, WatchingBackend)}
        loops.extend(functools.partial(b.watch, gateway, stop_event) for b in backends.values())
        loops.append(functools.partial(confirm_payouts, gateway, halt_sweep))
    threads = [
        threading.Thread(target=guarded(loop), name=f"paycore-worker-{i}", daemon=True)
        for i, loop in enumerate(loops)
    ]
    for thread in threads:
        thread.start()
    try:
        # Timed waits, so a signal handler in the main thread gets to run promptly.
        while not stop_event.wait(0.5):
            pass
    finally:
        dispatcher.stop()
        halt_sweep.set()
        halt_prices.set()
        halt_prune.set()
        halt_signals.set()
        deadline = time.monotonic() + gateway.settings.webhook_timeout + SHUTDOWN_GRACE
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        gateway.remove_notifier(waker)
    if crashed:
        raise crashed[0]
    stuck = [thread.name for thread in threads if thread.is_alive()]
    if stuck:
        log.warning(
            "stopping without %s: still busy %.0f s after the stop (their work is leased "
            "and is picked up again)",
            ", ".join(stuck),
            gateway.settings.webhook_timeout + SHUTDOWN_GRACE,
        )
    return stuck


async def worker_task(
    gateway: Gateway,
    *,
    stop_event: anyio.Event | None = None,
    dispatch: bool = True,
    sweep: bool = True,
) -> None:
    """``run_worker`` as an anyio task: returns when ``stop_event`` is set, and stops the
    threads cleanly (waiting for POSTs in flight) when the task is cancelled."""
    halt = threading.Event()

    async def relay_stop() -> None:
        try:
            if stop_event is None:
                await anyio.sleep_forever()
            else:
                await stop_event.wait()
        finally:
            halt.set()

    async with anyio.create_task_group() as group:
        group.start_soon(relay_stop)
        try:
            # Not abandoned on cancel: the thread is told to stop (relay_stop's finally)
            # and this waits for it, so no POST is cut off mid-flight.
            await anyio.to_thread.run_sync(
                functools.partial(
                    run_worker, gateway, stop_event=halt, dispatch=dispatch, sweep=sweep
                )
            )
        finally:
            halt.set()
            group.cancel_scope.cancel()


@attrs.frozen
class WorkerArgs:
    """The options of ``paycore worker`` (declared in ``paycore.runtime.cli``)."""

    database_url: str | None = None
    no_dispatch: bool = False
    no_sweep: bool = False
    no_watch: bool = False
    no_prices: bool = False
    no_prune: bool = False
    signals: Sequence[str] = ()
    no_signals: bool = False
    log_level: str = "INFO"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m paycore.runtime.worker``: the ``paycore worker`` command."""
    from .cli import main as paycore

    return paycore(["worker", *(sys.argv[1:] if argv is None else argv)])


def import_signals(spec: str) -> None:
    """``--signals MODULE`` imports MODULE, from the current directory or the Python path
    (as ``flask --app`` does); ``MODULE:FACTORY`` also calls FACTORY() (an app factory such
    as a Flask shop's ``create_app``), whose app registers its handlers."""
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    module_name, _, factory = spec.partition(":")
    module = importlib.import_module(module_name)
    if factory:
        make = getattr(module, factory, None)
        if not callable(make):
            raise ImportError(f"{module_name} has no callable {factory!r}")
        make()


def _count_handlers() -> int:
    return sum(len(registry.subscriptions()) for registry in every_registry())


def serving(gateway: Gateway) -> tuple[list[Signals], list[str], int]:
    """The registries of the host's gateways on ``gateway``'s database, the names of every
    handler the worker's consumer will call, and how many handlers sit on gateways of
    another database (not served: their events are in another database)."""
    same, other = hosted_on(gateway.settings.database_url)
    same = [registry for registry in same if registry is not gateway.signals]
    consumer = gateway.signal_consumer(*same)
    names = sorted(sub.name for sub in consumer.subscriptions())
    elsewhere = sum(len(r.subscriptions()) for r in other if r is not gateway.signals)
    return same, names, elsewhere


def start(args: WorkerArgs, open_gateway: Callable[[str | None], Gateway]) -> int:
    """The ``paycore worker`` process: the loops until SIGTERM or SIGINT; ``open_gateway``
    builds the gateway for ``--database-url`` (None: the configured database)."""
    # Every line redacted (paycore.ops.redaction): tracebacks quote URLs and driver messages.
    configure_logging(args.log_level.upper())
    empty: list[str] = []
    try:
        for spec in args.signals:
            before = _count_handlers()
            import_signals(spec)
            if _count_handlers() == before:
                empty.append(spec)
    except ImportError as exc:
        print(f"paycore worker: --signals: {exc}", file=sys.stderr)
        return 2
    try:
        gateway = open_gateway(args.database_url)
    except PaycoreError as exc:
        print(f"paycore worker: {exc.text}", file=sys.stderr)  # redacted by PaycoreError
        return 2
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: finishing deliveries in flight, then stopping", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info(
        "worker started (pid %d, dispatch=%s, sweep=%s)",
        os.getpid(),
        not args.no_dispatch,
        not args.no_sweep,
    )
    hosted, names, elsewhere = serving(gateway)
    if args.no_signals:
        log.info("signal handlers: none served (--no-signals)")
    else:
        log.info("signal handlers: %d served (%s)", len(names), ", ".join(names) or "none")
    for spec in empty:
        log.warning(
            "--signals %s registered no handler (an app factory registers its handlers "
            "only when called: pass MODULE:FACTORY, or run `flask --app MODULE paycore "
            "worker`)",
            spec,
        )
    if elsewhere:
        log.warning(
            "%d signal handlers are registered on gateways of another database and are not "
            "served here",
            elsewhere,
        )
    stuck: list[str] = []
    try:
        stuck = run_worker(
            gateway,
            stop_event=stop,
            dispatch=not args.no_dispatch,
            sweep=not args.no_sweep,
            watch=not args.no_watch,
            prices=not args.no_prices,
            prune=not args.no_prune,
            signals=not args.no_signals,
            handlers=hosted,
        )
    finally:
        if not stuck:  # a stuck thread may hold a connection that close() would wait for
            gateway.close()
    if stuck:
        # Interpreter shutdown could still wait (atexit hooks, a pool's threads): the
        # bound on SIGTERM is a promise to the supervisor, so leave now.
        logging.shutdown()
        os._exit(0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
