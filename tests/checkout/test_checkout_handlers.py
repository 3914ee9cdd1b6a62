"""The checkout routes in the core route table: page, assets and QR codes, then both adapters."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
from checkout_helpers import PREFIX, make_gateway, new_invoice
from flask import Flask
from litestar import Litestar
from litestar.testing import TestClient

from paycore import Gateway, Settings
from paycore.api import ROUTES, Request, Response, handle
from paycore.checkout import assets
from paycore.checkout.qr import MAX_DATA
from paycore_flask import PayCore
from paycore_litestar import PayCoreConfig, PayCorePlugin

ETH_LINK = "ethereum:0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC@31337?value=12500000000000000"


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    gw = make_gateway(clock=lambda: 1_700_000_000)
    yield gw
    gw.close()


def get(gateway: Gateway, path: str, query: str = "", **headers: str) -> Response:
    return handle(gateway, Request("GET", path, query, headers))


def config_of(html: str) -> dict[str, object]:
    found = re.search(r'<script type="application/json" id="paycore-config">(.*?)</script>', html)
    assert found is not None
    data: dict[str, object] = json.loads(found.group(1))
    return data


# -- the page -----------------------------------------------------------------------------------


def test_page_is_html_with_local_assets_and_strict_headers(gateway: Gateway) -> None:
    answer = get(gateway, "/checkout/", "invoice=anything")
    assert (answer.status, answer.content_type) == (200, "text/html; charset=utf-8")
    html = answer.body.decode()
    assert '<script type="module" src="assets/checkout.js"></script>' in html
    assert '<link rel="stylesheet" href="assets/checkout.css">' in html
    csp = answer.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "connect-src 'self'" in csp and "unsafe" not in csp
    assert answer.headers["referrer-policy"] == "no-referrer"  # the URL holds the invoice id


def test_page_without_the_slash_points_one_level_down(gateway: Gateway) -> None:
    html = get(gateway, "/checkout").body.decode()
    assert 'src="checkout/assets/checkout.js"' in html
    assert 'href="checkout/assets/checkout.css"' in html


def test_page_config_carries_currency_and_native_coins(gateway: Gateway) -> None:
    config = config_of(get(gateway, "/checkout/").body.decode())
    assert config["vsCurrency"] == "usd"
    assert 2000 <= int(str(config["pollMs"])) <= 3000  # docs/interface.md: poll every 2 to 5 s
    chains = config["chains"]
    assert isinstance(chains, dict)
    assert chains["31337"] == {"name": "anvil", "symbol": "ETH", "decimals": 18, "kind": "evm"}
    assert chains["728126428"]["decimals"] == 6 and chains["728126428"]["kind"] == "tron"


def test_page_config_cannot_close_its_script_element() -> None:
    gw = make_gateway(vs_currency="</script><script>alert(1)</script>")
    try:
        html = get(gw, "/checkout/").body.decode()
    finally:
        gw.close()
    assert html.count("</script>") == 2  # the config block's and the module's, nothing else
    assert config_of(html)["vsCurrency"] == "</script><script>alert(1)</script>"


def test_page_and_assets_need_no_session_even_in_strict_mode(gateway: Gateway) -> None:
    assert gateway.settings.auth_mode == "strict"
    bad = {"x-session-nonce": "1", "x-session-signature": "0x00"}
    assert get(gateway, "/checkout/", **bad).status == 200
    assert get(gateway, "/checkout/assets/checkout.js", **bad).status == 200
    assert get(gateway, "/checkout/qr", "data=" + quote(ETH_LINK), **bad).status == 200


def test_only_get_and_head(gateway: Gateway) -> None:
    answer = handle(gateway, Request("POST", "/checkout/", body=b"{}"))
    assert answer.status == 405 and answer.headers["allow"] == "GET"
    assert handle(gateway, Request("HEAD", "/checkout/")).status == 200


# -- assets ----------------------------------------------------------------------------------


def test_every_file_the_page_loads_is_shipped() -> None:
    shipped = assets()
    html = get_html()
    wanted = set(re.findall(r'(?:src|href)="assets/([^"?]+)"', html))
    for asset in shipped.values():
        if asset.name.endswith(".js"):
            wanted |= set(re.findall(r'from "\./([^"]+)"', asset.body.decode()))
    assert wanted and wanted <= set(shipped), wanted - set(shipped)
    assert {"checkout.js", "checkout.css", "favicon.svg", "decimal.js", "quote.js"} <= wanted


def get_html() -> str:
    gw = make_gateway()
    try:
        return get(gw, "/checkout/").body.decode()
    finally:
        gw.close()


def test_nothing_is_fetched_from_another_origin() -> None:
    # The configuration block holds block explorers' link templates: pages a payer may open
    # from a transaction hash, never fetched by the page (the CSP's connect-src is 'self').
    html = re.sub(r'(id="paycore-config">)[^<]*', r"\1", get_html())
    texts = [html] + [a.body.decode() for a in assets().values()]
    for text in texts:
        text = text.replace('xmlns="http://www.w3.org/2000/svg"', "")  # a name, not a fetch
        assert not re.search(r"https?://|//cdn|@import|url\(", text), text[:200]


@pytest.mark.parametrize(
    ("name", "content_type"),
    [
        ("checkout.js", "text/javascript; charset=utf-8"),
        ("checkout.css", "text/css; charset=utf-8"),
        ("favicon.svg", "image/svg+xml"),
    ],
)
def test_asset_is_served_with_its_type_and_an_etag(
    gateway: Gateway, name: str, content_type: str
) -> None:
    answer = get(gateway, f"/checkout/assets/{name}")
    assert (answer.status, answer.content_type) == (200, content_type)
    assert answer.body == assets()[name].body
    assert answer.headers["x-content-type-options"] == "nosniff"
    etag = answer.headers["etag"]
    again = get(gateway, f"/checkout/assets/{name}", **{"if-none-match": f'"x", W/{etag}'})
    assert (again.status, again.body) == (304, b"")
    assert get(gateway, f"/checkout/assets/{name}", **{"if-none-match": '"x"'}).status == 200


@pytest.mark.parametrize(
    "name", ["nope.js", "index.html", "__init__.py", "..", "%2e%2e", "checkout.js.map", "x" * 300]
)
def test_unknown_asset_is_a_one_line_404(gateway: Gateway, name: str) -> None:
    answer = get(gateway, f"/checkout/assets/{name}")
    assert (answer.status, answer.content_type) == (404, "text/plain; charset=utf-8")
    assert "\n" not in answer.body.decode() and len(answer.body) < 200


def test_an_asset_path_cannot_climb_out() -> None:
    gw = make_gateway()
    try:
        assert get(gw, "/checkout/assets/../index.html").status == 404
        assert get(gw, "/checkout/assets/sub/checkout.js").status == 404
    finally:
        gw.close()


# -- QR codes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "link",
    [
        ETH_LINK,
        "ethereum:0x5FbDB2315678afecb367f032d93F642f64180aa3@31337/transfer"
        "?address=0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC&uint256=25000000",
        "ethereum:0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC@1",
        "tron:TJRabPrwbZy45sbavfcjinPJC18kjpRTv8?amount=12.5",
    ],
)
def test_qr_of_a_payment_link_is_svg(gateway: Gateway, link: str) -> None:
    answer = get(gateway, "/checkout/qr", "data=" + quote(link, safe=""))
    assert (answer.status, answer.content_type) == (200, "image/svg+xml")
    svg = answer.body.decode()
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ')
    assert "<script" not in svg
    assert "default-src 'none'" in answer.headers["content-security-policy"]


def test_qr_encodes_exactly_the_link(gateway: Gateway) -> None:
    import segno

    svg = get(gateway, "/checkout/qr", "data=" + quote(ETH_LINK, safe="")).body
    expected = segno.make(ETH_LINK, error="m", micro=False, boost_error=False)
    size = expected.symbol_size(border=4)[0]
    assert f'viewBox="0 0 {size} {size}"'.encode() in svg


def test_qr_accepts_the_longest_link(gateway: Gateway) -> None:
    link = "ethereum:" + "a" * (MAX_DATA - len("ethereum:"))
    assert get(gateway, "/checkout/qr", "data=" + link).status == 200


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("", "data: required"),
        ("data=", "data: required"),
        ("data=" + "ethereum:" + "a" * MAX_DATA, "longer than 512"),
        ("data=https%3A%2F%2Fevil.example%2F", "must be an ethereum: or tron: payment link"),
        ("data=javascript%3Aalert(1)", "only URI characters"),
        ("data=ethereum%3A0x1%20%3Cb%3E", "only URI characters"),
        ("data=tron%3A%E2%82%AC", "only URI characters"),
        ("data=%00", "data: must not contain a NUL character"),
    ],
)
def test_qr_refuses_anything_else_with_a_400(gateway: Gateway, query: str, reason: str) -> None:
    answer = get(gateway, "/checkout/qr", query)
    assert (answer.status, answer.content_type) == (400, "text/plain; charset=utf-8")
    assert answer.body.decode().startswith("invalid request: data: ")
    assert reason in answer.body.decode()


# -- the route table and OpenAPI ----------------------------------------------------------------


def test_routes_are_in_the_table_and_the_document(gateway: Gateway) -> None:
    paths = {r.path: r for r in ROUTES}
    for path in ("/checkout/", "/checkout", "/checkout/assets/{name}", "/checkout/qr"):
        assert paths[path].methods == ("GET",) and paths[path].session == "none"
    doc = json.loads(get(gateway, "/openapi.json").body)
    assert {"/checkout/", "/checkout/qr"} <= set(doc["paths"])
    params = doc["paths"]["/checkout/qr"]["get"]["parameters"]
    assert [p["name"] for p in params] == ["data"]  # no session headers on a public page


# -- through both adapters ---------------------------------------------------------------------


def flask_get(gateway: Gateway, uri: str, **headers: str) -> tuple[int, str, bytes]:
    app = Flask("host")
    PayCore(app, gateway=gateway, prefix=PREFIX)
    reply = app.test_client().get(uri, headers=headers)
    return reply.status_code, reply.headers.get("content-type", ""), reply.get_data()


def litestar_get(gateway: Gateway, uri: str, **headers: str) -> tuple[int, str, bytes]:
    app = Litestar([], plugins=[PayCorePlugin(PayCoreConfig(gateway=gateway, prefix=PREFIX))])
    with TestClient(app) as client:
        reply = client.get(uri, headers=headers)
        return reply.status_code, reply.headers.get("content-type", ""), reply.content


@pytest.mark.parametrize(
    "path",
    [
        "/checkout/?invoice=x",
        "/checkout?invoice=x",
        "/checkout/assets/checkout.js",
        "/checkout/assets/quote.js",
        "/checkout/assets/checkout.css",
        "/checkout/assets/missing.js",
        "/checkout/qr?data=" + quote(ETH_LINK, safe=""),
        "/checkout/qr?data=http%3A%2F%2Fx",
    ],
)
def test_both_adapters_serve_the_same_bytes(gateway: Gateway, path: str) -> None:
    flask = flask_get(gateway, PREFIX + path)
    litestar = litestar_get(gateway, PREFIX + path)
    assert flask == litestar
    assert flask[0] in (200, 400, 404)


def test_the_page_reads_what_the_api_serves(gateway: Gateway) -> None:
    """The page's API base is one level above it: ``{prefix}/invoice/{guid}`` must answer
    there with a paymentUrl that leads back to this page."""
    invoice = new_invoice(gateway)
    status, _, body = litestar_get(gateway, f"{PREFIX}/invoice/{invoice.guid}")
    assert status == 200
    wire = json.loads(body)
    assert wire["paymentUrl"] == f"http://127.0.0.1:8000/paycore/checkout/?invoice={invoice.guid}"


@pytest.mark.parametrize("send", [flask_get, litestar_get], ids=["flask", "litestar"])
def test_both_adapters_answer_a_revalidation_with_304(gateway: Gateway, send: Any) -> None:
    etag = assets()["checkout.js"].etag
    status, _, body = send(
        gateway, f"{PREFIX}/checkout/assets/checkout.js", **{"if-none-match": etag}
    )
    assert (status, body) == (304, b"")


def test_page_config_carries_explorer_templates_configured_or_built_in() -> None:
    from paycore import ChainConfig
    from paycore.api.checkout import page_config

    settings = Settings(
        database_url="memory://",
        chains={
            1: ChainConfig(1, "ethereum", 12, "https://rpc.example/v3/secret"),
            31337: ChainConfig(31337, "anvil", 0, explorer_url="http://127.0.0.1:9/tx/{tx}"),
            728126428: ChainConfig(728126428, "tron-mainnet", 19, None, "TRX", 6),
            5: ChainConfig(5, "unknown", 1),
        },
    )
    chains = page_config(settings)["chains"]
    assert chains["1"]["explorerTx"] == "https://etherscan.io/tx/{tx}"  # kept with an rpc_url
    assert chains["1"]["explorerAddress"] == "https://etherscan.io/address/{address}"
    assert "secret" not in json.dumps(chains)
    assert chains["31337"]["explorerTx"] == "http://127.0.0.1:9/tx/{tx}"
    assert "explorerAddress" not in chains["31337"]
    assert chains["728126428"]["explorerTx"] == "https://tronscan.org/#/transaction/{tx}"
    assert "explorerTx" not in chains["5"]


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        ("explorer_url", "javascript:alert('{tx}')", "must be an http(s) URL containing {tx}"),
        ("explorer_url", "https://scan.example/tx/", "must be an http(s) URL containing {tx}"),
        ("explorer_url", 'https://scan.example/"{tx}', "must not contain spaces, quotes"),
        ("explorer_address_url", "https://scan.example/{tx}", "containing {address}"),
    ],
)
def test_explorer_templates_that_could_not_be_links_are_refused(
    field: str, value: str, reason: str
) -> None:
    from paycore import ChainConfig
    from paycore.errors import InvalidInput

    with pytest.raises(InvalidInput) as err:
        ChainConfig(1, "ethereum", **{field: value})
    assert field in err.value.text and reason in err.value.text


# -- the merchant's identity ----------------------------------------------------------------------


def test_page_carries_the_owners_profile_and_allows_its_logo_origin_only(gateway: Gateway) -> None:
    from checkout_helpers import OWNER

    from paycore.merchant import NewProfile

    invoice = new_invoice(gateway)
    plain = get(gateway, "/checkout/", f"invoice={invoice.guid}")
    assert "merchant" not in config_of(plain.body.decode())
    assert "img-src 'self';" in plain.headers["content-security-policy"]

    logo = "https://cdn.shop.example:8443/brand/logo.svg?v=3"
    gateway.merchant.set(OWNER, NewProfile("Mugs & Co", logo, "help@shop.example"))
    answer = get(gateway, "/checkout/", f"invoice={invoice.guid}")
    assert config_of(answer.body.decode())["merchant"] == {
        "name": "Mugs & Co",
        "logoUrl": logo,
        "support": "help@shop.example",
    }
    csp = answer.headers["content-security-policy"]
    assert "img-src 'self' https://cdn.shop.example:8443;" in csp
    assert "https:;" not in csp and "script-src 'self';" in csp
    # another invoice id, or none: the page names no merchant and loads no foreign image
    for query in ("invoice=00000000-0000-4000-8000-000000000000", "", "invoice=" + "x" * 300):
        other = get(gateway, "/checkout/", query)
        assert "merchant" not in config_of(other.body.decode())
        assert "img-src 'self';" in other.headers["content-security-policy"]
