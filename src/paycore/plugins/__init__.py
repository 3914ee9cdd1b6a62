"""How paycore finds its I/O: the pluggy hook specifications (``hookspecs``; plugin authors
take ``hookimpl`` from there), the plugin manager that loads built-ins, entry points and the
caller's own plugins (``manager``), and the plugins shipped inside the core (``builtins``).

The contracts the plugins fulfil stay with their concern (storage, notify, prices, chains),
so a plugin author reads one package per kind of plugin.
"""
