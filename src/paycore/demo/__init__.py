"""``paycore demo``: the whole gateway on a throwaway chain, start to finish, in seconds.

anvil, paycore's contracts, a Flask shop with paycore, its worker and a webhook receiver,
all started here and all stopped again: ``chain`` (anvil, deployment, transactions),
``shop`` (the app and its server), ``receiver`` (verifies webhook signatures), ``client``
(signed HTTP calls), ``flow`` (the steps), ``progress`` (the output), ``teardown`` (signals
and stopping), ``runner`` (exit statuses).
"""

from __future__ import annotations

from .runner import run_demo

__all__ = ["run_demo"]
