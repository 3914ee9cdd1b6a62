"""Batch payouts: many recipients paid from the merchant's own funds in the fewest
transactions the chain allows, each of which the merchant signs (issue 32, docs/payouts.md).

``rows`` reads and checks the recipients (JSON rows or a CSV upload) before anything is
built; ``records`` holds the batch and payout records; ``service`` builds the unsigned
transactions through the chain's ``PayoutBackend``, stores the batch and settles each payout
from the receipt of the transaction that carried it.
"""
