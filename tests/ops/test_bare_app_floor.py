"""The http bench's inline floor (``bare_app.py --floor-inline``) is the threaded floor moved
onto the event loop, nothing else.

``http_bench.py`` keeps, per kind, the fastest of the floors it measured; a twin that
answered differently -- skipped the nonce, refused nothing, served another body -- would
win by doing less and make paycore's ratio look worse than it is. So both Litestar floors
built on one SQLite file answer the same signed requests the same way, refuse the same
replays and unsigned writes, and the inline one really runs ``Floor.spend`` on the loop
(the threaded one in a worker thread, where no loop runs). The flag is refused where it
has no meaning, as ``--floor-async`` is.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib.util
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from coincurve import PrivateKey
from litestar.testing import TestClient

from paycore.auth.signatures import personal_message_hash
from paycore_storage import SqlStorage

BENCH = Path(__file__).resolve().parents[2] / "bench"
GET_BODY, POST_BODY = b'{"the": "get"}', b'{"the": "post"}'
INVOICE = (
    b'{"value": "49.90", "chainId": 1, "address": "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}'
)


def _bare_app() -> ModuleType:
    """``bench/bare_app.py`` (not a package), registered: Litestar resolves its handlers'
    annotations in their module's namespace."""
    name = "bare_app_under_test"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCH / "bare_app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _headers(key: PrivateKey, nonce: int, signed: bytes) -> dict[str, str]:
    message = f"sess:{nonce}:{hashlib.sha256(signed).hexdigest()}"
    signature = key.sign_recoverable(personal_message_hash(message), hasher=None)
    return {
        "x-session-nonce": str(nonce),
        "x-session-signature": "0x" + signature[:64].hex() + f"{signature[64] + 27:02x}",
        "content-type": "application/json",
    }


def _noting(floor: Any) -> list[bool]:
    """Make ``floor.spend`` note, call by call, whether an event loop runs where it runs
    (set before the app is built: its handlers take ``floor.spend`` then)."""
    on_loop: list[bool] = []
    spend = floor.spend

    def noted(*args: Any) -> Any:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            on_loop.append(False)
        else:
            on_loop.append(True)
        return spend(*args)

    floor.spend = noted
    return on_loop


def _one_invoice(
    bare_app: ModuleType, url: str, placeholder: str, *kinds: type
) -> tuple[Any, list[Any]]:
    """The database at ``url`` migrated, a floor of each of ``kinds`` built on it (a floor
    copies the migrated invoice table), and one invoice's row stored through the first's
    connection: the row, and the floors."""
    store = SqlStorage(url)
    store.migrate()
    store.close()
    floors = [kind(url) for kind in kinds]
    floor = floors[0]
    row = bare_app.invoice_row(INVOICE, "0x" + "11" * 20)
    values = ", ".join([placeholder] * len(row))
    floor._connection().execute(
        f"INSERT INTO paycore_invoices ({', '.join(row)}) VALUES ({values})", tuple(row.values())
    )
    return row, floors


@pytest.fixture
def floors(tmp_path: Path) -> Iterator[tuple[str, dict[str, tuple[TestClient[Any], list[bool]]]]]:
    """A migrated SQLite file holding one invoice, and both Litestar floors on it, each with
    its own ``Floor`` (as each bench process has its own)."""
    bare_app = _bare_app()
    url = f"sqlite:///{tmp_path / 'bench.sqlite3'}"
    row, (threaded, inline) = _one_invoice(bare_app, url, "?", bare_app.Floor, bare_app.Floor)
    notes = {"threaded": _noting(threaded), "inline": _noting(inline)}
    with (
        TestClient(bare_app.litestar_app(GET_BODY, POST_BODY, threaded)) as threaded_client,
        TestClient(
            bare_app.litestar_app(GET_BODY, POST_BODY, inline, inline=True)
        ) as inline_client,
    ):
        yield (
            row["guid"],
            {
                "threaded": (threaded_client, notes["threaded"]),
                "inline": (inline_client, notes["inline"]),
            },
        )


def _answers(client: TestClient[Any], guid: str, key: PrivateKey, nonce: int) -> list[Any]:
    """Every request the bench sends a floor, a replay of each signed one, an unsigned
    POST and a read of an invoice that is not there: (status, body) in order."""
    get, read = f"/paycore/invoice/{guid}", f"/paycore/read/invoice/{guid}"
    missing = "/paycore/read/invoice/00000000-0000-4000-8000-000000000000"
    sent = [
        client.get(get, headers=_headers(key, nonce, get.encode())),
        client.get(get, headers=_headers(key, nonce, get.encode())),  # replay
        client.get(read, headers=_headers(key, nonce + 1, read.encode())),
        client.get(missing, headers=_headers(key, nonce + 2, missing.encode())),
        client.post("/paycore/invoice", content=INVOICE, headers=_headers(key, nonce + 3, INVOICE)),
        client.post("/paycore/invoice", content=INVOICE, headers=_headers(key, nonce + 3, INVOICE)),
        client.post(
            "/paycore/write/invoice", content=INVOICE, headers=_headers(key, nonce + 4, INVOICE)
        ),
        client.post(
            "/paycore/write/invoice", content=INVOICE, headers=_headers(key, nonce + 4, INVOICE)
        ),
        # Unsigned: no nonce to spend. (The floor trusts any key it recovers: whose key it
        # is, paycore's session registry, is no part of the floor.)
        client.post("/paycore/invoice", content=INVOICE),
        client.get(get),  # the public read: no nonce, one SELECT
        client.get(get, headers={"if-none-match": '"x"'}),
    ]
    return [(answer.status_code, answer.content) for answer in sent]


def test_the_inline_floor_answers_as_the_threaded_one_from_the_loop(
    floors: tuple[str, dict[str, tuple[TestClient[Any], list[bool]]]],
) -> None:
    guid, apps = floors
    key = PrivateKey(hashlib.sha256(b"floor-inline-key").digest())
    # One table of nonces, as in the bench: each floor spends its own.
    threaded = _answers(apps["threaded"][0], guid, key, 1)
    inline = _answers(apps["inline"][0], guid, key, 101)
    assert [status for status, _ in threaded] == [
        200,
        401,
        200,
        404,
        201,
        401,
        201,
        401,
        401,
        200,
        304,
    ]
    assert inline == threaded
    assert threaded[0][1] == GET_BODY and threaded[4][1] == POST_BODY
    # And a nonce one floor spent is spent for the other (the bench shares the counters).
    replay = _headers(key, 1, f"/paycore/invoice/{guid}".encode())
    assert apps["inline"][0].get(f"/paycore/invoice/{guid}", headers=replay).status_code == 401
    threaded_calls, inline_calls = apps["threaded"][1], apps["inline"][1]
    assert threaded_calls and not any(threaded_calls)  # in the worker threads
    assert inline_calls and all(inline_calls)  # on the loop: no thread hop


@pytest.mark.parametrize(
    "args",
    [
        ["--framework", "flask", "--floor", "sqlite:////tmp/x.sqlite3"],
        ["--framework", "litestar", "--floor", "postgresql://postgres@127.0.0.1:5432/test"],
        ["--framework", "litestar"],
    ],
    ids=["flask", "postgresql", "no-floor"],
)
def test_floor_inline_is_refused_but_for_litestar_on_sqlite(args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "bare_app.py"), "--port", "1", "--bodies", "absent.json",
         *args, "--floor-inline"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done
    assert "--floor-inline is Litestar's, with a SQLite --floor" in done.stderr


@pytest.mark.postgres
def test_the_postgres_floors_spend_and_read_in_one_statement(postgres_schema: Any) -> None:
    """The signed read's floor on PostgreSQL, threaded and async: one statement that spends
    the nonce and reads the invoice, as paycore's does (a floor making two round trips would
    flatter paycore). It answers 200 for the invoice, 401 for a replay, and 404 for a
    missing invoice, whose nonce it spent all the same; other bytes under a signature are
    another signer's (the floor trusts any key it recovers), whose nonce is its own."""
    bare_app = _bare_app()
    url = postgres_schema().render_as_string(hide_password=False)
    row, (floor, async_floor) = _one_invoice(
        bare_app, url, "%s", bare_app.Floor, bare_app.AsyncFloor
    )
    missing = "00000000-0000-4000-8000-000000000000"
    key = PrivateKey(hashlib.sha256(b"one-statement-floor").digest())
    executed: list[str] = []

    def answers(spend_and_read: Any, nonce: int) -> list[int]:
        signed = b"/paycore/read/invoice/x"
        return [
            spend_and_read(_headers(key, nonce, signed), signed, row["guid"]),
            spend_and_read(_headers(key, nonce, signed), signed, row["guid"]),  # replay
            spend_and_read(_headers(key, nonce + 1, signed), signed, missing),
            spend_and_read(_headers(key, nonce + 1, signed), signed, row["guid"]),  # spent
            spend_and_read(_headers(key, nonce + 2, signed), b"other bytes", row["guid"]),
        ]

    connection = floor._connection()
    traced = connection.execute

    def tracing(query: str, *args: Any) -> Any:
        executed.append(query)
        return traced(query, *args)

    connection.execute = tracing  # type: ignore[method-assign]
    assert answers(floor.spend_and_read, 10) == [200, 401, 404, 401, 200]
    assert len(executed) == 5 and all("WITH spent AS" in query for query in executed)

    async def run() -> list[int]:
        found = []
        for nonce, guid in ((20, row["guid"]), (20, row["guid"]), (21, missing), (21, row["guid"])):
            signed = b"/paycore/read/invoice/y"
            found.append(
                await async_floor.spend_and_read(_headers(key, nonce, signed), signed, guid)
            )
        return found

    assert asyncio.run(run()) == [200, 401, 404, 401]
