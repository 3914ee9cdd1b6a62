"""The demo's signal handling in-process: a real SIGINT, delivered where Python cannot
raise it (a finaliser), must still stop the run at the next checkpoint."""

from __future__ import annotations

import gc
import os
import signal
from collections.abc import Iterator

import pytest

from paycore.demo.errors import Interrupted
from paycore.demo.teardown import Interrupts


class _SignalsOnFinalise:
    """Like a C binding's handle whose ``__del__`` runs while a Ctrl-C arrives."""

    def __del__(self) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs between bytecodes, here in the finaliser
            pass


@pytest.fixture
def interrupts() -> Iterator[Interrupts]:
    owned = Interrupts()
    owned.install()
    yield owned
    owned.restore()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the point
def test_a_signal_swallowed_by_a_finaliser_is_raised_at_the_next_checkpoint(
    interrupts: Interrupts,
) -> None:
    holder = _SignalsOnFinalise()
    del holder
    gc.collect()  # Python printed "Exception ignored" and went on: the raise was lost
    with pytest.raises(Interrupted) as caught:
        interrupts.checkpoint()
    assert caught.value.signum == signal.SIGINT


def test_a_checkpoint_raises_once_a_signal_came_and_not_before(interrupts: Interrupts) -> None:
    interrupts.checkpoint()  # nothing came: returns, the run goes on
    with pytest.raises(Interrupted):
        os.kill(os.getpid(), signal.SIGINT)  # raised by the handler itself, here
        for _ in range(1000):
            pass
    with pytest.raises(Interrupted):  # and latched: every later checkpoint stops the run
        interrupts.checkpoint()


def test_a_checkpoint_inside_a_shielded_section_waits_for_its_end(
    interrupts: Interrupts,
) -> None:
    with pytest.raises(Interrupted), interrupts.shielded():
        os.kill(os.getpid(), signal.SIGINT)
        interrupts.checkpoint()  # shielded: must not raise here
        reached = True
    assert reached
