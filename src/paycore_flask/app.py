"""A minimal standalone host app, for ``paycore serve --framework flask`` and the benchmark.

Besides paycore under ``prefix`` it answers ``/`` (where the API is) and ``/health`` (a
trivial JSON route: a load balancer's probe, and the bench's bare-framework baseline).
"""

from __future__ import annotations

from flask import Flask, Response, jsonify

from paycore import Gateway, Settings

from .extension import PayCore


def create_app(
    settings: Settings | None = None,
    *,
    prefix: str = "/paycore",
    gateway: Gateway | None = None,
) -> Flask:
    app = Flask("paycore_flask")
    if gateway is None:
        gateway = Gateway(settings or Settings.from_env())
    ext = PayCore(app, gateway=gateway, prefix=prefix)

    @app.get("/")
    def index() -> Response:
        api = ext.prefix + "/"
        return jsonify(service="paycore", api=api, openapi=api + "openapi.json")

    @app.get("/health")
    def health() -> Response:
        return jsonify(ok=True)

    return app
