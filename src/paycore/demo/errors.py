"""The demo's one failure type: a step that could not be done, said in one line.

The command prints ``DemoError`` texts as they are and exits 1; anything else that escapes
a step is a bug in the demo or in paycore and is shown with its type so it can be found.
"""

from __future__ import annotations


class DemoError(Exception):
    """A step failed for a reason the user can act on (anvil missing, a refused request)."""


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived: a BaseException, like KeyboardInterrupt, so that no
    ``except Exception`` in a step mistakes it for a failure and carries on."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum
