"""The records and rules of the interface (docs/interface.md), with no I/O of their own:
the records and their wire form (``records``), the invoice status machine (``machine``),
turning a POST /invoice body into an invoice and attributing deposits (``invoices``), money
parsing (``money``), addresses and token ids (``tokens``).

Grouped so that what the protocol means sits apart from how it is stored, sent or served;
this ``__init__`` imports nothing, so importing one record pulls in nothing else.
"""
