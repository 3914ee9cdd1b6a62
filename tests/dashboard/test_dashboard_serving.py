"""The dashboard as both adapters serve it: the page, its files and their headers, the
setting that turns it off, package data, and the catalogues' keys in every language."""

from __future__ import annotations

import json
import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from paycore import Gateway, Settings

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "paycore"
ASSETS = PACKAGE / "dashboard" / "assets"


def client(framework: str, **settings: object):  # type: ignore[no-untyped-def]
    gateway = Gateway(Settings(database_url="memory://", **settings), entry_points=False)
    if framework == "flask":
        from paycore_flask import create_app

        return create_app(gateway=gateway, prefix="/paycore").test_client(), gateway
    from litestar.testing import TestClient as LitestarClient

    from paycore_litestar import create_app as create_litestar

    return LitestarClient(create_litestar(gateway=gateway, prefix="/paycore")), gateway


@pytest.mark.parametrize("framework", ["flask", "litestar"])
def test_page_and_files_are_served_under_a_strict_policy(framework: str) -> None:
    http, gateway = client(framework)
    try:
        with http if framework == "litestar" else _null():
            page = http.get("/paycore/dashboard")
            assert page.status_code == 200
            csp = page.headers["content-security-policy"]
            assert "script-src 'self'" in csp and "connect-src 'self'" in csp
            assert "unsafe" not in csp and "http" not in csp
            assert "frame-ancestors 'none'" in csp
            html = page.text if framework == "litestar" else page.get_data(as_text=True)
            config = json.loads(re.search(r'id="paycore-config">(.*?)</script>', html).group(1))
            assert "vsCurrency" in config
            src = re.search(r'src="([^"]+dashboard\.js)"', html).group(1)
            assert src == "dashboard/assets/dashboard.js"
            js = http.get("/paycore/" + src)
            assert js.status_code == 200
            assert js.headers["content-type"].startswith("text/javascript")
            again = http.get("/paycore/" + src, headers={"if-none-match": js.headers["etag"]})
            assert again.status_code == 304
            missing = http.get("/paycore/dashboard/assets/nothing.js")
            assert missing.status_code == 404
    finally:
        gateway.close()


@pytest.mark.parametrize("framework", ["flask", "litestar"])
def test_the_setting_turns_the_dashboard_off(framework: str) -> None:
    http, gateway = client(framework, dashboard_enabled=False)
    try:
        with http if framework == "litestar" else _null():
            for path in ("/paycore/dashboard", "/paycore/dashboard/assets/dashboard.js"):
                answer = http.get(path)
                assert answer.status_code == 404
            assert http.get("/paycore/checkout/assets/format.js").status_code == 200
    finally:
        gateway.close()


def test_the_setting_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings(database_url="memory://").dashboard_enabled is True
    assert Settings(database_url="memory://", dashboard_enabled="0").dashboard_enabled is False


def test_dashboard_files_are_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    globs = config["tool"]["setuptools"]["package-data"]["paycore"]
    files = [
        p.relative_to(PACKAGE).as_posix()
        for p in (PACKAGE / "dashboard").rglob("*")
        if p.is_file() and p.suffix not in (".py", ".pyc")
    ]
    assert "dashboard/index.html" in files
    assert [f for f in files if not any(fnmatch(f, g) for g in globs)] == []


def test_every_language_has_every_key_and_its_placeholders() -> None:
    def catalogue(code: str) -> dict[str, str]:
        text = (ASSETS / f"messages-{code}.js").read_text(encoding="utf-8")
        return dict(re.findall(r'^\s+(\w+): "((?:[^"\\]|\\.)*)",$', text, re.M))

    english = catalogue("en")
    assert len(english) > 100
    index = (ASSETS / "messages.js").read_text(encoding="utf-8")
    codes = re.findall(r'import (\w+) from "\./messages-\w+\.js"', index)
    checkout = (PACKAGE / "checkout" / "assets" / "messages.js").read_text(encoding="utf-8")
    listed = re.search(r"MESSAGES = \{(.*)\}", checkout)
    assert listed is not None
    assert sorted(codes) == sorted(listed.group(1).replace(" ", "").split(","))
    for code in codes:
        own = catalogue(code)
        assert set(own) == set(english), (code, set(english) ^ set(own))
        for key, text in own.items():
            wanted = set(re.findall(r"\{\w+\}", english[key]))
            assert set(re.findall(r"\{\w+\}", text)) == wanted, (code, key)


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
