"""How a running gateway behaves in its logs and under strain: secrets kept out of every log
line, error text, banner and repr (``redaction``), and few log lines and growing waits while
storage is down (``outages``), and tables that do not grow for ever (``retention``).
docs/operations.md is the operator's account.

Cross-cutting, so import-light: ``errors`` and ``config`` import ``redaction``, the gateway,
the worker and the watchers ``outages``; this ``__init__`` imports nothing.
"""
