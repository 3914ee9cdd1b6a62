"""Stop everything the demo started, in reverse order, whatever ended the run.

A Ctrl-C can land between any two bytecodes. Were it to land between ``Popen`` returning and
the stopper being recorded, anvil would outlive the demo; so starting a resource and
recording how to stop it happen inside ``Interrupts.shielded()``, where a signal is only
noted and raised once the section is over. The same shield covers the teardown itself, so
a second Ctrl-C cannot cut it short and leave a server or a node behind.

Raising from a signal handler has one more hole: the exception surfaces in whatever Python
code runs at that instant, and if that is a finaliser (a C library's ``__del__`` run by the
garbage collector) Python prints "Exception ignored" and carries on as if no signal came.
So a signal is also latched, and ``checkpoint()`` (called by every step, every progress
line and every wait) raises it again until the run has ended.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeVar

from .errors import Interrupted

T = TypeVar("T")
HANDLED = (signal.SIGINT, signal.SIGTERM)


class Interrupts:
    """Turns SIGINT and SIGTERM into :class:`Interrupted`, except inside ``shielded()``."""

    def __init__(self) -> None:
        self._depth = 0
        self._pending: int | None = None
        self._fired: int | None = None
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        """Own both signals; SIGTERM too, so a supervisor's stop also cleans up."""
        for signum in HANDLED:
            self._previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        self._previous.clear()

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        self._fired = self._fired or signum
        if self._depth:
            self._pending = self._pending or signum
            return
        raise Interrupted(signum)

    def checkpoint(self) -> None:
        """Raise a signal that came and was lost (swallowed by a finaliser) or is still
        owed; outside a shielded section only, like the handler itself."""
        if self._fired and not self._depth:
            raise Interrupted(self._fired)

    @contextmanager
    def shielded(self, *, swallow: bool = False) -> Iterator[None]:
        """A section no signal interrupts; a signal that came meanwhile is raised at its
        end, unless ``swallow`` (the final teardown: nothing is left to interrupt)."""
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            pending, outermost = self._pending, self._depth == 0
            if outermost:
                self._pending = None
            if outermost and pending and not swallow:
                raise Interrupted(pending)


class Teardown:
    """A stack of named stoppers; ``close()`` runs each once, newest first."""

    def __init__(self, interrupts: Interrupts) -> None:
        self.interrupts = interrupts
        self._stoppers: list[tuple[str, Callable[[], None]]] = []

    def acquire(self, name: str, start: Callable[[], T], stop: Callable[[T], None]) -> T:
        """``start()`` and the registration of ``stop(result)`` as one uninterruptible act.
        ``start`` must be quick (spawn, bind, start a thread): waiting belongs outside."""
        with self.interrupts.shielded():
            resource = start()
            self._stoppers.append((name, lambda: stop(resource)))
        return resource

    def close(self) -> list[str]:
        """Run every stopper even if some fail (each failure is reported on stderr);
        returns the names stopped cleanly, in the order they were stopped."""
        stopped: list[str] = []
        with self.interrupts.shielded(swallow=True):
            while self._stoppers:
                name, stop = self._stoppers.pop()
                try:
                    stop()
                    stopped.append(name)
                except Exception as exc:  # keep going: the others must still stop
                    print(f"paycore demo: stopping {name} failed: {exc}", file=sys.stderr)
        return stopped
