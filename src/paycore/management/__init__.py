"""The owner's management settings (docs/interface.md §Management calls): the salt-signed
calls, app keys and the operator's e-mail switch (``service``), their records
(``records``), and the staking helpers (``staking``). docs/management.md is the
merchant-facing account.

This ``__init__`` imports nothing: storage imports ``records`` alone.
"""
