"""Webhooks, end to end: an owner's URL and secret (``config``), the queue records
(``records``), one signed POST (``delivery``), the loop that leases and sends
(``dispatcher``), the delivery log and redelivery (``log``), and the check that a URL points
at a public address (``netguard``).

Together because a change to one (a retry rule, a header) usually reaches the next. This
``__init__`` imports nothing: storage imports ``records`` and must not pull an HTTP client
in with it.
"""
