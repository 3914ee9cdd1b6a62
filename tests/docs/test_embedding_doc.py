"""docs/embedding.md's async Litestar example runs as written: its module is loaded from the
page, the shop's async handler creates an invoice through the Gateway on a worker thread,
and the sync handler reads it back, through Litestar's test client."""

from __future__ import annotations

import asyncio
import re
import sys
import types
from pathlib import Path

import pytest
from litestar.testing import TestClient

PAGE = Path(__file__).resolve().parents[2] / "docs" / "embedding.md"


def _module(name: str, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The page's block that opens with ``# name``, as an imported module (Litestar reads
    its handlers' annotations from ``sys.modules``)."""
    text = PAGE.read_text(encoding="utf-8")
    [source] = re.findall(rf"```python\n# {re.escape(name)}\n(.*?)```", text, re.S)
    module = types.ModuleType(name.removesuffix(".py"))
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(source, str(PAGE), "exec"), module.__dict__)
    return module


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def test_the_async_handler_calls_the_gateway_off_the_event_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shop = _module("litestar_async_checkout.py", monkeypatch)
    on_loop: list[bool] = []
    gateway_call = shop.Gateway.create_invoice

    def spy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        on_loop.append(_loop_running())
        return gateway_call(self, *args, **kwargs)

    monkeypatch.setattr(shop.Gateway, "create_invoice", spy)
    with TestClient(shop.app) as client:
        made = client.post("/shop/orders/A-1042/pay")
        assert made.status_code == 201, made.text
        guid = made.json()["guid"]
        assert client.get(f"/shop/invoices/{guid}").json() == {"status": "init"}
        read = client.get(f"/paycore/invoice/{guid}").json()
        assert read["data"] == {"order": "A-1042"}
    assert on_loop == [False]  # called once, on a thread with no event loop running


def _block(opening: str, name: str, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """The page's Python block whose first line is ``opening``, run as a module of its own:
    each block must run as shown, without the page's other blocks."""
    text = PAGE.read_text(encoding="utf-8")
    [source] = [
        block
        for block in re.findall(r"```python\n(.*?)```", text, re.S)
        if block.startswith(opening)
    ]
    module = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, name, module)
    exec(compile(source, str(PAGE), "exec"), module.__dict__)
    return module


def test_the_flask_guard_refuses_one_endpoint_and_lets_the_others_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    shop = _block(
        "from flask import Flask, request\nfrom paycore import Settings", "flask_guard", monkeypatch
    )
    client = shop.app.test_client()
    refused = client.post("/paycore/invoice", json={})
    assert (refused.status_code, refused.text) == (403, "staff only")
    staff = client.post("/paycore/invoice", json={}, headers={"x-staff": "yes"})
    assert staff.status_code != 403 and "staff only" not in staff.text  # paycore's own answer
    assert client.get("/paycore/prices").status_code == 200


def test_the_litestar_guards_single_out_one_endpoint_by_name_and_by_opt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PAYCORE_DATABASE_URL", "memory://")
    shop = _block("from datetime import datetime", "litestar_guards", monkeypatch)
    monkeypatch.setattr(shop, "night", lambda: True)
    with TestClient(shop.app) as client:
        refused = client.post("/paycore/invoice", json={})
        assert refused.status_code == 401 and "staff only" in refused.text
        staff = client.post("/paycore/invoice", json={}, headers={"x-staff": "1"})
        assert "staff only" not in staff.text  # past the guard: paycore's own answer
        closed = client.get("/paycore/invoice/00000000-0000-0000-0000-000000000000")
        assert closed.status_code == 401 and "closed" in closed.text
        assert client.get("/paycore/prices").status_code == 200


def test_the_rate_limit_applies_to_paycores_routes(monkeypatch: pytest.MonkeyPatch) -> None:
    from litestar import Litestar, get

    from paycore_litestar import PayCorePlugin

    shop = _block("from litestar.middleware.rate_limit", "rate_limit", monkeypatch)

    @get("/shop")
    def own() -> str:
        return "yours"

    app = Litestar([own], plugins=[PayCorePlugin(shop.config)])
    with TestClient(app) as client:
        answers = [client.get("/paycore/prices").status_code for _ in range(61)]
        assert answers[:60] == [200] * 60 and answers[60] == 429
        assert client.get("/shop").status_code == 200  # the host's routes are not limited
