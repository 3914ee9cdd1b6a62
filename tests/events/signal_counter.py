"""A shop's handler module, imported by worker processes with ``--signals signal_counter``.

It builds its own gateway at import (``PAYCORE_DATABASE_URL``) and registers a handler on
it with ``gateway.on``: the shape that a separate worker used to ignore. The handler notes
each call's start and end, with the process id, in the file ``SIGNAL_COUNT_FILE`` (one
``os.write`` per line, appended, so lines of several processes never interleave), and takes
``SIGNAL_HANDLER_SECONDS`` in between, so a test can kill a worker mid-handler.
"""

from __future__ import annotations

import os
import time

from paycore import Gateway, InvoiceEvent, Settings

gateway = Gateway(Settings.from_env())


def note(what: str, event_id: int) -> None:
    line = f"{what} {event_id} {os.getpid()}\n".encode()
    fd = os.open(os.environ["SIGNAL_COUNT_FILE"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


@gateway.on(name="shop.count")
def count(event: InvoiceEvent) -> None:
    note("start", event.id)
    time.sleep(float(os.environ.get("SIGNAL_HANDLER_SECONDS", "0")))
    note("end", event.id)
