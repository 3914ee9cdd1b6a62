"""Payment links: one reusable link per offer, a fresh invoice for each buyer who opens it.

``records`` holds the link record and the creation request storage and the HTTP layer
share; ``service`` (``Gateway.links``) creates, lists, disables and opens links; ``page`` is
the small form a buyer fills in when the link lets them choose the amount. Like the other
concern packages it imports nothing here, so storage can import ``records`` alone.
"""
