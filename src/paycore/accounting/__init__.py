"""The accounting export: an owner's invoices, payments, refunds and withdrawals over a
time range, as CSV or JSON lines, streamed batch by batch (``Gateway.accounting``).

``export`` holds the columns (docs/interface.md §GET /export lists them), the row of each
kind of record and the two encodings; ``service`` reads storage in keyset batches so an
export of any size holds one batch in memory. Imports nothing here, like the other
concern packages.
"""
