"""The http bench's ceiling: a bare app of the same framework, under the same server.

It answers the two measured endpoints with fixed bytes -- the very bodies paycore answered
them with, captured by ``http_bench.py`` -- and does nothing else: no signature check, no
storage, no routing table of its own beyond the two routes (and ``/health`` for the readiness
probe). Litestar runs under uvicorn and Flask under werkzeug's threaded server, each exactly
as ``paycore serve`` runs them (one process, logging as quiet), so the ratio paycore / bare
is what paycore itself costs on that server.

    python bench/bare_app.py --framework litestar --port 8001 --bodies bodies.json

``bodies.json``: ``{"get": "<GET /paycore/invoice/{guid} answer>", "post": "<POST
/paycore/invoice answer>"}``.
"""

# No ``from __future__ import annotations``: Litestar reads the handlers' annotations, and
# the framework is imported inside the factory, so they must be evaluated where defined.
import argparse
import json
import logging
from typing import Any

PREFIX = "/paycore"


def litestar_app(get_body: bytes, post_body: bytes) -> Any:
    from litestar import Litestar, Request, Response, get, post

    @get(PREFIX + "/invoice/{guid:str}")
    async def read(guid: str) -> Response[bytes]:
        return Response(get_body, media_type="application/json")

    @post(PREFIX + "/invoice")
    async def create(request: Request[Any, Any, Any]) -> Response[bytes]:
        await request.body()  # received in full, as paycore's handler does
        return Response(post_body, media_type="application/json", status_code=201)

    @get("/health")
    async def health() -> dict[str, bool]:
        return {"ok": True}

    return Litestar([read, create, health], openapi_config=None, logging_config=None)


def flask_app(get_body: bytes, post_body: bytes) -> Any:
    from flask import Flask, Response, request

    app = Flask("bare")

    @app.get(PREFIX + "/invoice/<guid>")
    def read(guid: str) -> Response:
        return Response(get_body, mimetype="application/json")

    @app.post(PREFIX + "/invoice")
    def create() -> Response:
        request.get_data()
        return Response(post_body, status=201, mimetype="application/json")

    @app.get("/health")
    def health() -> dict[str, bool]:
        return {"ok": True}

    return app


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--framework", choices=("litestar", "flask"), required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--bodies", required=True, help="JSON file with the two answers")
    args = parser.parse_args()
    with open(args.bodies, encoding="utf-8") as file:
        bodies = json.load(file)
    get_body, post_body = bodies["get"].encode(), bodies["post"].encode()
    logging.basicConfig(level=logging.WARNING)
    if args.framework == "litestar":
        import uvicorn

        app = litestar_app(get_body, post_body)
        uvicorn.run(
            app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False,
            log_config=None,
        )  # fmt: skip
        return
    from werkzeug.serving import run_simple

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    run_simple("127.0.0.1", args.port, flask_app(get_body, post_body), threaded=True)


if __name__ == "__main__":
    main()
