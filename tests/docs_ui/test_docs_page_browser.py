"""``{prefix}/docs`` in a real Chromium, under both adapters: Swagger UI, served from the
package under the strict Content-Security-Policy, renders every operation of
``{prefix}/openapi.json`` with no script error, CSP refusal or request to another origin.

Needs Debian's chromium and the npm package playwright-core, like the checkout page's test.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from checkout_browser_driver import ARTIFACTS, CHROMIUM, ROOT, require_browser, serve
from checkout_helpers import make_gateway

from paycore.api import ROUTES
from paycore.api.openapi import document

pytestmark = [pytest.mark.node, pytest.mark.browser]
SCRIPT = ROOT / "tests" / "node" / "docs_browser.mjs"


@pytest.mark.parametrize("framework", ["litestar", "flask"])
def test_docs_page_renders_every_operation(framework: str) -> None:
    require_browser()
    gateway = make_gateway()
    ARTIFACTS.mkdir(exist_ok=True)
    try:
        with serve(framework, gateway) as base:
            config = {
                "url": base + "/docs",
                "chromium": CHROMIUM,
                "screenshot": str(ARTIFACTS / f"docs-{framework}.png"),
            }
            run = subprocess.run(
                ["node", str(SCRIPT), json.dumps(config)],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=ROOT,
            )
    finally:
        gateway.close()
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["problems"] == []
    assert seen["status"] == 200
    assert "script-src 'self'" in seen["csp"] and "unsafe-inline" not in seen["csp"]
    assert seen["title"].startswith("paycore")
    expected = [
        (method.upper(), path)
        for path, item in document(ROUTES)["paths"].items()
        for method in item
    ]
    shown = list(zip(seen["methods"], seen["paths"], strict=True))
    assert sorted(shown) == sorted(expected)
