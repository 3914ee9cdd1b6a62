"""``paycore demo`` as a command: signals in, one exit status out, nothing left running.

Exit 0 when the story ends with the money withdrawn; 1 with a one-line reason when a step
fails; 130 on Ctrl-C (143 on SIGTERM), the shell's convention for death by signal. In
every case the teardown stops the worker, the shop, the receiver and anvil's process group
and removes the temp dir before the command returns.
"""

from __future__ import annotations

import sys

from .errors import DemoError, Interrupted
from .flow import STEPS, Story, tell
from .progress import Progress
from .teardown import Interrupts, Teardown


def run_demo(anvil: str | None = None) -> int:
    interrupts = Interrupts()
    interrupts.install()
    progress = Progress(total=len(STEPS))
    teardown = Teardown(interrupts)
    progress.headline(
        "paycore demo: a Flask shop takes a USDT payment on a local anvil chain (Ctrl-C stops)"
    )
    try:
        tell(Story(progress=progress, teardown=teardown, anvil_path=anvil))
        status, outcome = 0, "the invoice is paid and its money withdrawn"
    except Interrupted as exc:
        status, outcome = 128 + exc.signum, f"interrupted at {progress.where()}"
    except DemoError as exc:
        status, outcome = 1, f"failed at {progress.where()}: {exc}"
    except Exception as exc:  # unforeseen: name the type so it can be traced
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())  # one line, whatever it was
        status, outcome = 1, f"failed at {progress.where()}: {_clip(reason)}"
    finally:
        stopped = teardown.close()
        interrupts.restore()
    if stopped:
        progress.headline(f"cleaned up: {', '.join(stopped)}")
    line = f"paycore demo: {outcome} ({progress.elapsed:.1f} s)"
    print(line, file=sys.stdout if status == 0 else sys.stderr, flush=True)
    return status


def _clip(text: str, limit: int = 200) -> str:
    """Library errors can run to pages (a connection pool's retry story); one line is the
    promise, and the first couple of hundred characters name the cause."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
