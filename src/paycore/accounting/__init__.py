"""The books: which invoice each deposit pays, and what the books hold handed back out.

``attribution`` records confirmed deposits against invoices, values them and takes back
what a reorg removed, inside the caller's storage transaction (``Gateway.ingest``,
``Gateway.record_deposit``); the accounting export (``Gateway.accounting``) hands an owner's
invoices, payments, refunds and withdrawals over a time range back out, as CSV or JSON
lines, streamed batch by batch.

``export`` holds the columns (docs/interface.md §GET /export lists them), the row of each
kind of record and the two encodings; ``service`` reads storage in keyset batches so an
export of any size holds one batch in memory. Imports nothing here, like the other
concern packages.
"""
