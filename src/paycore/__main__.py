"""``python -m paycore``: the ``paycore`` command where its console script is not on PATH."""

from __future__ import annotations

from .runtime.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
