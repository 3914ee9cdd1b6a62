"""A minimal standalone host app, for ``paycore serve --framework litestar`` and the bench.

Besides paycore under ``prefix`` it answers ``/`` (where the API is) and ``/health`` (a
trivial JSON route: a load balancer's probe, and the bench's bare-framework baseline).
"""

from __future__ import annotations

from typing import Any

from litestar import Litestar, get

from paycore import Gateway, Settings

from .plugin import PayCoreConfig, PayCorePlugin


def create_app(
    settings: Settings | None = None,
    *,
    prefix: str = "/paycore",
    gateway: Gateway | None = None,
) -> Litestar:
    config = PayCoreConfig(gateway=gateway, settings=None if gateway else settings, prefix=prefix)

    @get("/", include_in_schema=False)
    async def index() -> dict[str, Any]:
        return {
            "service": "paycore",
            "api": config.prefix + "/",
            "openapi": config.prefix + "/openapi.json",
        }

    @get("/health", include_in_schema=False)
    async def health() -> dict[str, bool]:
        return {"ok": True}

    # logging_config=None: Litestar would replace the root logger's handlers, and with them
    # the redacting formatter ``paycore serve`` installs (paycore.ops.redaction).
    return Litestar(
        [index, health],
        plugins=[PayCorePlugin(config)],
        openapi_config=None,
        logging_config=None,
    )
