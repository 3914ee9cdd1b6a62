"""The Gateway's operations by concern, each a mixin of ``paycore.gateway.Gateway``.

The facade is one object with every operation a caller needs; its methods are grouped
here by what they do, so no file of it grows past reading. Each mixin's methods are typed
with ``self: Gateway``: they are the Gateway's own methods, written in another file, and use
its storage and services as the methods in ``gateway.py`` do. Import the ``Gateway`` from
``paycore`` (or ``paycore.gateway``), never a mixin on its own.
"""
