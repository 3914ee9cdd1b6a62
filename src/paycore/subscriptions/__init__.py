"""Subscriptions (docs/subscriptions.md): plans, subscribers, the worker's period invoices and
the status moves they make (``service``), what the HTTP calls ask for (``requests``) and the
subscriber's hosted page (``page``). The records and the status table are in
``paycore.domain.subscriptions`` and ``paycore.domain.subscription_machine``."""
