"""Test helpers for merchants' own tests (docs/testing.md).

``paycore.testing.plugin`` is a pytest plugin, loaded in every pytest session of a project
that installs paycore (entry point ``pytest11``); it defines fixtures only, all named
``paycore_*``, so a test gets one only by asking for it, and importing it costs nothing
beyond pytest. ``paycore.testing.chain`` is the fake chain that pays invoices through the
real attribution path, ``paycore.testing.client`` the session-signing HTTP client, and
``paycore.testing.storage_contract`` the storage contract suite for storage plugins.
"""
