"""The storage contract suite shipped to plugin authors (``paycore.testing.storage_contract``),
run here on every built-in backend through this folder's ``storage`` fixture."""

from paycore.testing.storage_contract import *  # noqa: F403 - the suite's tests and its clock
