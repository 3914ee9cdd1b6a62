"""The poll queues over the outbox: one per session key or legacy poll token.

``queues`` holds ``EventQueues``, reached as ``Gateway.events``: the HTTP poll handlers
open, drain and close queues and register poll tokens through it, never through storage.
The outbox itself is written by the Gateway in the transaction of each change.
"""
