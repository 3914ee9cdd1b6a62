"""Every bench in ``bench/`` still runs and still prints its figures.

The benches are not part of the library, so nothing else imports them: a change to an API
they call (a typed request replacing a mapping, a server the bare app must mirror) broke
them silently before. Each runs here at a size that takes seconds -- its figures are noise
at that size and are not judged -- and the test checks the run ends well and prints, as
JSON lines, the figures its docstring promises, each a positive number.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import URL

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _run(script: str, *args: str, timeout: float = 300) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYCORE_")}
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    assert done.returncode == 0, f"{script} exited {done.returncode}: {done.stderr[-3000:]}"
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, f"{script} printed no JSON lines: {done.stdout[-2000:]}"
    return lines


@pytest.fixture
def postgres_url(postgres_server: URL) -> str:
    return postgres_server.render_as_string(hide_password=False)


def _positive(line: dict[str, Any], *fields: str) -> None:
    for name in fields:
        value = line.get(name)
        assert isinstance(value, int | float) and value > 0, (name, line)


@pytest.mark.slow
@pytest.mark.postgres
def test_auth_bench(postgres_url: str) -> None:
    lines = _run("auth_bench.py", "--requests", "20", "--reps", "3", "--postgres", postgres_url)
    overhead = [line for line in lines if line.get("figure") == "auth_overhead_ms"]
    # paycore's overhead and the floor's, on both databases
    found = {(line["db"], line.get("floor", False)) for line in overhead}
    assert found == {(db, floor) for db in ("sqlite", "postgresql") for floor in (False, True)}
    for line in overhead:
        _positive(line, "value", "ceiling_value", "ratio")


@pytest.mark.slow
@pytest.mark.postgres
def test_http_bench_prints_paycore_bare_and_floor(postgres_url: str) -> None:
    lines = _run(
        "http_bench.py", "--seconds", "0.3", "--reps", "3", "--clients", "1",
        "--postgres", postgres_url, timeout=600,
    )  # fmt: skip
    rates = [line for line in lines if line.get("figure") == "req_per_s"]
    seen = {(line["framework"], line["db"], line["endpoint"], line["ceiling"]) for line in rates}
    for framework in ("litestar", "flask"):
        for db in ("sqlite", "postgresql"):
            for endpoint in (
                "GET /invoice/{guid}", "POST /invoice", "GET /invoice/{guid} (unsigned)",
                "GET /invoice/{guid} (unsigned, If-None-Match: 304)",
            ):  # fmt: skip
                for ceiling in ("bare_req_per_s", "floor_req_per_s"):
                    assert (framework, db, endpoint, ceiling) in seen
    for line in rates:
        _positive(line, "value", "ceiling_value", "ratio")
        if line["ceiling"] == "bare_req_per_s":
            # The arbiter's CPU alone read zero before; the whole tree's cannot.
            _positive(line, "server_cpu_ms_per_req", "bare_server_cpu_ms_per_req")


@pytest.mark.slow
@pytest.mark.postgres
def test_scale_bench(postgres_url: str) -> None:
    lines = _run(
        "scale_bench.py", "--sizes", "1000,2000", "--reps", "3", "--inner", "2",
        "--postgres-url", postgres_url, timeout=600,
    )  # fmt: skip
    ratios = [line for line in lines if line.get("kind") == "ratio"]
    assert {line["backend"] for line in ratios} == {"sqlite", "postgresql"}
    for line in ratios:
        _positive(line, "value", "ceiling_value", "ratio")


@pytest.mark.slow
@pytest.mark.anvil
@pytest.mark.postgres
def test_ingest_bench(postgres_url: str) -> None:
    lines = _run(
        "ingest_bench.py", "--deposits", "20", "--reps", "3", "--postgres", postgres_url,
        timeout=900,
    )  # fmt: skip
    ingest = [line for line in lines if line.get("bench") == "ingest"]
    assert {(line["database"], line["kind"]) for line in ingest} == {
        (db, kind) for db in ("sqlite", "postgresql") for kind in ("erc20", "native")
    }
    for line in ingest:
        _positive(line, "figure", "ceiling", "ratio", "ceiling_tx_rows_only")


@pytest.mark.slow
@pytest.mark.postgres
def test_ws_outbox_bench(postgres_url: str) -> None:
    lines = _run("ws_outbox_bench.py", "--events", "20", "--reps", "3", "--postgres", postgres_url)
    assert len(lines) == 2, lines  # one per database
    for line in lines:
        assert line["ceiling"]["what"], line


@pytest.mark.slow
@pytest.mark.postgres
def test_signals_bench(postgres_url: str) -> None:
    lines = _run("signals_bench.py", "--events", "20", "--reps", "3", "--postgres", postgres_url)
    assert {line["database"] for line in lines} == {"sqlite", "postgresql"}
    for line in lines:
        _positive(line, "figure", "ceiling", "ratio")


def test_endpoints_bench(postgres_url: str) -> None:
    lines = _run("endpoints_bench.py", "--changes", "10", "--reps", "3", "--postgres", postgres_url)
    assert [line["database"] for line in lines] == ["sqlite", "postgresql"]
    for line in lines:
        _positive(line, "figure", "ceiling", "ratio")


@pytest.mark.parametrize("db", ["sqlite", "postgresql"])
def test_checkout_push_bench(postgres_url: str, db: str) -> None:
    lines = _run(
        "checkout_push_bench.py", "--pages", "20", "--changes", "5", "--rate", "10",
        "--runs", "1", "--modes", "stream,bare,poll", "--quiet", "0.5", "--gets", "5",
        "--db", db, "--postgres", postgres_url, timeout=600,
    )  # fmt: skip
    rungs = [line for line in lines if "mode" in line and "figure" not in line]
    assert {line["mode"] for line in rungs} == {"poll", "stream", "bare"}
    for line in rungs:
        assert line["changes"] == 5 and line["not_opened"] == 0, line
        _positive(line, "update_p99_s")
    for mode in ("stream", "bare"):
        [rung] = [line for line in rungs if line["mode"] == mode]
        assert rung["missed"] == 0 and rung["passes"], rung
        assert rung["kib_per_stream"] is not None and rung["plain_gets"] > 0, rung
    medians = [line for line in lines if line.get("figure") == "median"]
    assert {line["mode"] for line in medians} == {"poll", "stream", "bare"}


@pytest.mark.slow
@pytest.mark.postgres
def test_events_bench_webhook(postgres_url: str) -> None:
    for database, url in (("sqlite", []), ("postgresql", ["--database-url", postgres_url])):
        [line] = _run("events_bench.py", "--events", "20", "--only", "webhook", *url)
        assert line["bench"] == "events" and line["database"] == database, line
        webhook = line["webhook"]
        _positive(webhook["latency_ms"], "p50", "p90", "p99", "max")
        _positive(
            webhook, "offered_changes_per_sec", "deliveries_per_sec", "bare_posts_per_sec", "ratio"
        )


@pytest.mark.slow
def test_events_bench_websocket_half() -> None:
    """The WebSocket half is bench/ws_bench.py run as a subprocess: its report is nested."""
    [line] = _run("events_bench.py", "--events", "5", "--only", "websocket", timeout=120)
    report = line["websocket"]
    assert report["bench"] == "ws" and "webhook" not in line, line
    for case in ("ceiling/bare-websockets", "flask/in-process", "litestar/in-process"):
        _positive(report["cases"][case], "n", "p50", "p99", "max")


@pytest.mark.slow
@pytest.mark.postgres
def test_search_bench(postgres_url: str) -> None:
    # 5,000 rows is the least at which every search finds something (customer "cust4242").
    lines = _run(
        "search_bench.py", "--size", "5000", "--reps", "3", "--inner", "3",
        "--postgres-url", postgres_url,
    )  # fmt: skip
    figures = {
        "floor_get_by_guid", "order_id_in_data", "word_in_description", "rare_customer_id",
        "paid_last_week", "paid_week_in_march", "stats_30_days",
    }  # fmt: skip
    seen = [(line["backend"], line["figure"]) for line in lines]
    assert sorted(seen) == sorted((db, f) for db in ("postgresql", "sqlite") for f in figures)
    for line in lines:
        _positive(line, "ms", "floor_ms", "ratio")


@pytest.mark.slow
@pytest.mark.postgres
def test_server_bench(postgres_url: str) -> None:
    # granian is no dependency of paycore's, so its two candidates are left out: the rest
    # are what `paycore serve --workers N` runs (gunicorn) and uvicorn's own workers.
    lines = _run(
        "server_bench.py", "--seconds", "0.2", "--reps", "1", "--clients", "1",
        "--connections", "1", "--only", "gunicorn,uvicorn", "--postgres", postgres_url,
        timeout=300,
    )  # fmt: skip
    servers = ("flask+gunicorn-gthread", "litestar+uvicorn", "litestar+gunicorn-uvicorn")
    seen = [(line["database"], line["server"], line["workers"]) for line in lines]
    assert sorted(seen) == sorted(
        (db, server, workers)
        for db in ("sqlite", "postgresql")
        for server in servers
        for workers in (1, 2)
    )
    for line in lines:
        _positive(line, "paycore_rps", "bare_rps", "ratio")
        assert len(line["paycore_reps"]) == len(line["bare_reps"]) == 1, line


@pytest.mark.slow
@pytest.mark.postgres
def test_webhook_fairness_bench(postgres_url: str) -> None:
    [line] = _run(
        "webhook_fairness_bench.py", "--events", "10", "--rate", "100", "--deadline", "0.5",
        "--drip", "0.2", "--reps", "3", "--postgres", postgres_url, timeout=300,
    )  # fmt: skip
    assert line["bench"] == "webhook_fairness", line
    for database in ("sqlite", "postgresql"):
        found = line[database]
        _positive(found["median_p99_ms"], "quiet", "dripping", "uncapped")
        _positive(found, "ratio", "uncapped_ratio")
        for mode, runs in found["runs"].items():
            assert len(runs) == 3, (database, mode, runs)
            for run in runs:
                _positive(run, "p50", "p99", "max")
                if mode != "quiet":  # the hostile merchant's receiver was really sent to
                    _positive(run, "dripper_connections")


@pytest.mark.slow
@pytest.mark.redis
def test_ws_bench(redis_url: str) -> None:
    [line] = _run("ws_bench.py", "--events", "5", "--redis-url", redis_url, timeout=120)
    assert line["bench"] == "ws" and line["events_per_case"] == 5, line
    _positive(line, "push_frame_bytes")
    cases = line["cases"]
    assert set(cases) == {
        "ceiling/bare-websockets", "flask/in-process", "litestar/in-process",
        "flask/redis", "litestar/redis",
    }  # fmt: skip
    for case in cases.values():  # the Redis cases measured, not "skipped"
        assert case["n"] == 5, case
        _positive(case, "p50", "p90", "p99", "max", "mean")


@pytest.mark.slow
@pytest.mark.anvil
@pytest.mark.postgres
def test_payout_gas(postgres_url: str) -> None:
    lines = _run("payout_gas.py", "--sizes", "2", "--reps", "3", "--postgres", postgres_url)
    seen = [(line["database"], line["kind"], line["recipients"]) for line in lines]
    assert sorted(seen) == sorted(
        (db, kind, 2) for db in ("sqlite", "postgres") for kind in ("native", "erc20")
    )
    for line in lines:
        _positive(line, "figure", "floor", "ratio", "build_ms")
        assert all(len(samples) == 3 for samples in line["samples"].values()), line


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.parametrize(
    ("framework", "db"), [("litestar", "sqlite"), ("flask-wsgi", "postgresql")]
)
def test_signed_cpu_bench_prints_paycore_and_each_floor(
    postgres_url: str, framework: str, db: str
) -> None:
    lines = _run(
        "signed_cpu_bench.py", "--framework", framework, "--db", db, "--requests", "20",
        "--kinds", "get,post,public,poll", "--postgres", postgres_url,
    )  # fmt: skip
    assert [line["kind"] for line in lines] == ["get", "post", "public", "poll"]
    floors = {"get": "floor_with_read", "post": "floor_with_write"}
    for line in lines:
        assert (line["framework"], line["db"], line["reps"]) == (framework, db, 3), line
        _positive(line, "cpu_ms", "wall_ms", "floor_cpu_ms", "floor_wall_ms", "cpu_ratio")
        fuller = floors.get(line["kind"])
        if fuller is None:  # the poll's floor is one SELECT: no fuller one
            assert not any(name.startswith("floor_with") for name in line), line
            continue
        _positive(line, f"{fuller}_cpu_ms", f"{fuller}_wall_ms")
        _positive(line, "cpu_ratio" + fuller.removeprefix("floor"))


def test_signed_cpu_bench_refuses_fewer_than_three_repetitions() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "signed_cpu_bench.py"), "--reps", "2"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--reps must be at least 3" in done.stderr
