"""``PayCore``: the Flask extension, in the usual ``PayCore(app)`` / ``init_app(app)`` shape.

The extension object holds configuration only, never an app: everything per app (its
gateway, its prefix) lives in ``app.extensions["paycore"]``, so one extension instance can
serve an application factory that builds many apps (tests, multi-tenant hosts).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
from flask import Blueprint, Flask, current_app, has_app_context
from flask import Response as FlaskResponse
from werkzeug.routing import PathConverter

from paycore import Gateway, Settings
from paycore.api import Route, routes
from paycore.realtime import hub_for

from .view import EXTENSION_KEY, METHODS, paycore_view, route_view
from .ws import add_websocket_route

CONVERTER = "paycore_path"


class AnyPathConverter(PathConverter):
    """Like ``path``, newlines included."""

    regex = "[^/][\\s\\S]*?"


@attrs.frozen
class PayCoreState:
    """What ``app.extensions["paycore"]`` holds for one app."""

    extension: PayCore
    gateway: Gateway
    prefix: str
    blueprint: Blueprint


class PayCore:
    """Mount paycore's HTTP interface under ``prefix`` of a Flask app.

    Give a ready ``gateway`` (shared by every app this extension is bound to), or
    ``settings`` (a gateway is built per app), or neither: settings then come from
    ``PAYCORE_*`` keys of ``app.config`` over ``PAYCORE_*`` environment variables.
    Only one blueprint is added, named ``paycore``: one URL rule per row of the route table
    (endpoint ``paycore.<route name>``, e.g. ``paycore.create_invoice``, which host
    ``before_request`` guards and rate limiters can single out), a catch-all rule for every
    other path and method (paycore's own 404/405 answers), and the ``{prefix}/ws`` WebSocket
    route; the host's other routes, error handlers and JSON provider are left alone.

    ``plugins`` are pluggy plugins (objects or modules with ``hookimpl`` functions,
    ``paycore.plugins``) registered on the gateway the extension builds; a ready
    ``gateway`` was built with its own. ``guards`` run before each request to paycore's
    routes only, as the blueprint's ``before_request`` functions: one that returns a
    response (``("staff only", 403)``) answers in place of paycore, ``None`` lets the
    request through. ``after_request`` functions take and return each of paycore's
    responses (headers, logging): the blueprint-level counterpart of WSGI middleware, which
    wraps the whole app.
    """

    def __init__(
        self,
        app: Flask | None = None,
        *,
        gateway: Gateway | None = None,
        settings: Settings | None = None,
        prefix: str = "/paycore",
        plugins: Iterable[object] = (),
        guards: Sequence[Callable[[], Any]] = (),
        after_request: Sequence[Callable[[FlaskResponse], FlaskResponse]] = (),
    ) -> None:
        if gateway is not None and settings is not None:
            raise TypeError("PayCore takes a gateway or settings, not both")
        self.plugins = tuple(plugins)
        if gateway is not None and self.plugins:
            raise TypeError("PayCore takes plugins only when it builds the gateway")
        self._gateway = gateway
        self._settings = settings
        self.prefix = normalize_prefix(prefix)
        self.guards = tuple(guards)
        self.after_request = tuple(after_request)
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask) -> None:
        if EXTENSION_KEY in app.extensions:
            raise RuntimeError(
                "paycore is already registered on this Flask app; use the existing "
                "PayCore instance (app.extensions['paycore']) instead of adding another"
            )
        gateway = self._gateway or Gateway(
            self._settings or settings_from_config(app.config), plugins=self.plugins
        )
        # Invoices made outside a request (host code, scripts) link to this app's page too.
        gateway.mount_prefix = self.prefix
        blueprint = Blueprint(EXTENSION_KEY, __name__, url_prefix=self.prefix or None)
        for guard in self.guards:
            blueprint.before_request(guard)
        for hook in self.after_request:
            blueprint.after_request(hook)
        for route in routes():
            add_route_rule(blueprint, route, self.prefix)
        # The fallback: one endpoint, two rules, the prefix itself and everything below it.
        blueprint.add_url_rule(
            "/",
            "api",
            paycore_view,
            methods=METHODS,
            defaults={"subpath": ""},
            strict_slashes=False,
        )
        # werkzeug's own path converter stops at a newline; ours takes any character, so
        # every path under the prefix reaches paycore and gets its one-line answers.
        app.url_map.converters.setdefault(CONVERTER, AnyPathConverter)
        blueprint.add_url_rule(f"/<{CONVERTER}:subpath>", "api", paycore_view, methods=METHODS)
        hub_for(gateway)  # the Hub exists before the first change, even with builtins blocked
        add_websocket_route(blueprint)
        app.extensions[EXTENSION_KEY] = PayCoreState(self, gateway, self.prefix, blueprint)
        app.register_blueprint(blueprint)
        add_cli(app)

    @property
    def gateway(self) -> Gateway:
        """The current app's gateway; outside an app context, the one given to the
        constructor (scripts and workers that share it), if any."""
        if has_app_context():
            return state(current_app).gateway
        if self._gateway is not None:
            return self._gateway
        raise RuntimeError("PayCore.gateway needs an app context, or pass gateway=")


def add_cli(app: Flask) -> None:
    """``flask paycore ...``: the ``paycore`` commands on this app's gateway settings and
    plugins, so ``flask paycore migrate`` migrates the database the app uses."""
    from paycore.runtime.cli import hosted_cli
    from paycore.runtime.host import CommandSource

    if "paycore" not in app.cli.commands:
        app.cli.add_command(hosted_cli(CommandSource.of_gateway(lambda: state(app).gateway)))


def add_route_rule(blueprint: Blueprint, route: Route, prefix: str) -> None:
    """One table row as one URL rule, ``{guid}`` becoming ``<guid>``.

    The rule takes only the row's methods (and HEAD with GET, which paycore answers too):
    any other method falls through to the catch-all, whose answer is paycore's 405. No
    automatic OPTIONS (paycore answers OPTIONS itself), no slash merging or redirects: a
    path that is not exactly the row's reaches the catch-all and paycore's 404.
    """
    rule = re.sub(r"\{(\w+)\}", r"<\1>", route.path)
    blueprint.add_url_rule(
        rule,
        route.name,
        route_view(route, prefix),
        methods=list(route.methods),
        provide_automatic_options=False,
        strict_slashes=True,
        merge_slashes=False,
    )


def state(app: Flask) -> PayCoreState:
    try:
        found: PayCoreState = app.extensions[EXTENSION_KEY]
    except KeyError:
        raise RuntimeError(
            "paycore is not registered on this Flask app; call PayCore(app) or init_app(app)"
        ) from None
    return found


def normalize_prefix(prefix: str) -> str:
    """``"paycore/"`` -> ``"/paycore"``; ``""`` or ``"/"`` mounts at the root."""
    stripped = prefix.strip().strip("/")
    return "/" + stripped if stripped else ""


def settings_from_config(config: Mapping[str, Any]) -> Settings:
    """Settings from ``PAYCORE_*`` app.config keys over ``PAYCORE_*`` environment variables.

    Flask apps are configured through app.config; the values are turned into the same text
    form the environment uses so that ``Settings.from_env`` stays the only parser.
    """
    environ = dict(os.environ)
    for key, value in config.items():
        if key.startswith("PAYCORE_"):
            environ[key] = _as_env_text(value)
    return Settings.from_env(environ)


def _as_env_text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple | set | frozenset):
        return ",".join(str(v) for v in value)
    if isinstance(value, Mapping):
        return json.dumps(dict(value), default=str)
    return str(value)
