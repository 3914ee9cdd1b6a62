"""The processes an operator starts: the ``paycore`` command (``cli``), a standalone host app
under a real server (``serve``) and the background worker (``worker``, also embeddable in an
app's thread or lifespan).

They sit on top of the Gateway and the adapters, and only the command line and the demo
import them, so a web process does not load argparse, signal handling or a server.
"""
