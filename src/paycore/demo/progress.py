"""What the demo prints: numbered steps with the seconds since start, and under them the
details, events and webhooks as they arrive.

Plain lines, so the output reads the same in a terminal, a CI log or a pipe a test reads.
On a terminal a wait also shows a ticking clock on its own line (rewritten with ``\\r``
and erased before the next line), so a slow step visibly is not a hung one.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

INDENT = " " * 16


class Progress:
    """Step counter and elapsed time for one run of ``total`` steps."""

    def __init__(
        self,
        total: int,
        out: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.total = total
        self.out = out or sys.stdout
        self.clock = clock
        self.started = clock()
        self.number = 0
        self.label = ""
        self._ticking = False
        self._live = bool(getattr(self.out, "isatty", lambda: False)())

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    def _write(self, line: str) -> None:
        if self._ticking:
            self.out.write("\r\x1b[2K")  # erase the ticker line before printing over it
            self._ticking = False
        self.out.write(line + "\n")
        self.out.flush()

    def headline(self, text: str) -> None:
        self._write(text)

    def step(self, label: str, text: str) -> None:
        """Begin the next step: ``[ 3/13   1.2s] label      text``."""
        self.number += 1
        self.label = label
        width = len(str(self.total))
        self._write(
            f"[{self.number:>{width}}/{self.total} {self.elapsed:5.1f}s] {label:<10} {text}"
        )

    def detail(self, text: str) -> None:
        """A result of the current step, indented under it."""
        self._write(INDENT + text)

    def event(self, channel: str, text: str) -> None:
        """Something paycore told the merchant: ``poll`` events and ``webhook`` deliveries."""
        self._write(f"{INDENT}{channel:<8} {text}")

    def tick(self, text: str) -> None:
        """While waiting: on a terminal, one line rewritten in place; elsewhere nothing."""
        if self._live:
            self.out.write(f"\r\x1b[2K{INDENT}{text} ({self.elapsed:.1f}s)")
            self.out.flush()
            self._ticking = True

    def where(self) -> str:
        """The current step, for a failure message."""
        return f"step {self.number}/{self.total} ({self.label})" if self.number else "start"
