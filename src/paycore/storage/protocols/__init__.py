"""The storage contract by concern: one module per concern, each a narrow ``Protocol`` (or a
few) whose docstrings state what storage owes for it. ``paycore.storage.StorageTx`` is all of
them in one; a service that needs a few concerns may ask for just those (``tx: Refunds``).

A store implements ``StorageTx`` whole. ``paycore.testing.storage_contract`` holds it to
every method of every protocol here.
"""
