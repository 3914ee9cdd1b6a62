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
