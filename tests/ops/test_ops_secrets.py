"""No secret in anything a full run prints: ``paycore serve --workers 2`` (both frameworks)
and ``paycore worker`` run as real processes with every kind of secret-bearing setting, are
driven through successes and failures -- bad input, a node that refuses connections, a
database outage, webhook deliveries a receiver rejects -- and then their whole output, and
every response body, is searched for each secret.

The run is checked to have gone through the paths that used to leak (the banner, a node
error -- which once quoted the RPC URL, and now names the endpoint by its position -- a
storage failure), so a quiet run cannot pass by saying nothing.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from pathlib import Path

import httpx
import pytest
from ops_helpers import PrivatePostgres, Process, Receiver, free_port, serve, wait_until

from paycore import Gateway, Settings
from paycore.webhooks.config import set_webhook

pytestmark = pytest.mark.postgres

CHAIN = 31337
NILE = 3448148188  # a Tron chain, for the TronGrid key
ETH = f"{CHAIN}:0x0000000000000000000000000000000000000000"
OWNER = "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"
FACTORY = "0x5FbDB2315678afecb367f032d93F642f64180aa3"
TRON_FACTORY = "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"

# Secrets shaped like the real ones (an Infura project id, an Alchemy key, ...), unique to
# this run so that finding one anywhere can only mean it leaked.
RUN = secrets.token_hex(4)
RPC_PATH_KEY = f"9aa3d95b3bc440fa{RUN}ea12eaa4"  # https://host/v3/<key>
RPC_QUERY_KEY = f"QryK3y{RUN}"  # ?apikey=<key>
ALCHEMY_KEY = f"aLcH3mY-{RUN}-k3y_0123456789"
TRONGRID_KEY = f"tr0n-{RUN}-5a6b-4c3d-9e8f"
COINGECKO_KEY = f"CG-{RUN}c01ngeck0"
COINGECKO_QUERY_KEY = f"cgQ{RUN}uery"
REDIS_PASSWORD = f"R3dis-{RUN}"
SMTP_PASSWORD = f"Smtp-{RUN}-pw"


def _env(database: str, closed: int) -> dict[str, str]:
    chains = {
        str(CHAIN): {
            "name": "anvil",
            "confirmations": 0,
            "rpc_url": f"http://127.0.0.1:{closed}/v3/{RPC_PATH_KEY}?apikey={RPC_QUERY_KEY}",
            "factory": FACTORY,
            "poll_interval": 0.3,
        },
        str(NILE): {
            "name": "nile",
            "native_symbol": "TRX",
            "native_decimals": 6,
            "rpc_url": f"http://127.0.0.1:{closed}/",
            "api_key": TRONGRID_KEY,
            "factory": TRON_FACTORY,
            "poll_interval": 0.3,
        },
    }
    feeds = {
        "1:0x0000000000000000000000000000000000000000": {
            "aggregator": "0x5f4eC3Df9cbd43714FE2740f5E3616155c5b8419",
            "rpc_url": f"http://127.0.0.1:{closed}/v2/{ALCHEMY_KEY}",
        }
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAYCORE_")}
    env.update(
        {
            "PAYCORE_DATABASE_URL": database,
            "PAYCORE_AUTH_MODE": "soft",
            "PAYCORE_CHAINS": json.dumps(chains),
            "PAYCORE_PRICES": json.dumps({ETH: "2000"}),
            "PAYCORE_CHAINLINK_FEEDS": json.dumps(feeds),
            "PAYCORE_COINGECKO_ENABLED": "1",
            "PAYCORE_COINGECKO_URL": f"http://127.0.0.1:{closed}/?x_cg_pro_api_key={COINGECKO_QUERY_KEY}",
            "PAYCORE_COINGECKO_API_KEY": COINGECKO_KEY,
            "PAYCORE_COINGECKO_MAX_RETRIES": "0",
            "PAYCORE_REDIS_URL": f"redis://:{REDIS_PASSWORD}@127.0.0.1:6379/0",
            "PAYCORE_SMTP_HOST": "127.0.0.1",
            "PAYCORE_SMTP_PORT": str(closed),
            "PAYCORE_SMTP_USER": "paycore",
            "PAYCORE_SMTP_PASSWORD": SMTP_PASSWORD,
            "PAYCORE_WEBHOOK_ALLOW_PRIVATE": "1",
            "PAYCORE_WEBHOOK_RETRY_SCHEDULE": "0.2",
            "PAYCORE_WEBHOOK_RETRY_EVERY": "0.5",
            "PAYCORE_WORKER_POLL_INTERVAL": "0.1",
            "PAYCORE_WORKER_SWEEP_INTERVAL": "0.2",
            "PAYCORE_WORKER_BACKOFF_MAX": "0.5",
            "PAYCORE_PRICE_REFRESH_INTERVAL": "0.5",
        }
    )
    return env


def _invoice(deadline_secs: int = 3600) -> dict[str, object]:
    return {
        "owner": OWNER,
        "value": "10",
        "description": "secrets test",
        "chainId": CHAIN,
        "acceptedTokens": [ETH],
        "address": "0x" + secrets.token_hex(20),
        "deadlineSecs": deadline_secs,
    }


def test_a_full_run_prints_no_secret(private_postgres: PrivatePostgres, tmp_path: Path) -> None:
    database = private_postgres.create_database("secrets_" + RUN)
    receiver = Receiver(status=500)  # every delivery fails and is logged as such
    seed = Gateway(Settings(database_url=database, webhook_allow_private=True))
    webhook_secret = set_webhook(seed.storage, OWNER, receiver.url, allow_private=True).secret
    seed.close()
    closed = free_port()  # nothing listens: every node, price API and SMTP call fails
    env = _env(database, closed)
    bodies: list[str] = []
    # Two workers each: the workers' own log lines (written after the fork) are searched too.
    flask, flask_base = serve("flask", env, tmp_path / "flask.log", workers=2)
    litestar, litestar_base = serve("litestar", env, tmp_path / "litestar.log", workers=2)
    worker = Process(["worker"], env, tmp_path / "worker.log")
    processes = {"flask": flask, "litestar": litestar, "worker": worker}
    try:
        with httpx.Client(timeout=30) as client:
            for base in (flask_base, litestar_base):
                statuses = []
                for answer in (
                    client.get(base + "/prices"),
                    client.post(base + "/invoice", content=b"{not json"),
                    client.post(base + "/invoice", json=_invoice(deadline_secs=1)),
                    client.get(f"{base}/invoice/00000000-0000-4000-8000-000000000000"),
                    client.get(
                        base + "/initWallet", params={"chainId": CHAIN, "ownerAddress": OWNER}
                    ),
                    client.get(
                        base + "/getBalances", params={"chainId": NILE, "ownerAddress": OWNER}
                    ),
                ):
                    statuses.append(answer.status_code)
                    bodies.append(answer.text)
                assert statuses[:4] == [200, 400, 201, 404], bodies[-6:]
                # The node's failure is named by endpoint, never by URL (docs/chains.md).
                assert statuses[4] == 502 and "no endpoint answers" in bodies[-2], bodies[-2]
                assert "127.0.0.1" not in bodies[-2]
            # The invoices expire within a second: the worker's sweeper emits their events
            # and the dispatcher fails to deliver them to the 500-answering receiver.
            wait_until(lambda: len(receiver.received()) >= 2, what="webhook attempts")
            wait_until(lambda: "watcher pass failed" in worker.output(), what="a node failure")

            private_postgres.stop("immediate")
            for base in (flask_base, litestar_base):
                for answer in (
                    client.get(f"{base}/invoice/00000000-0000-4000-8000-000000000000"),
                    client.post(base + "/invoice", json=_invoice()),
                ):
                    assert answer.status_code == 503, answer.text
                    bodies.append(answer.text)
            time.sleep(1.0)  # the worker's loops meet the outage too
            private_postgres.start()
            wait_until(lambda: "storage is back" in worker.output(), what="the worker's recovery")
    finally:
        for process in processes.values():
            process.stop()
        receiver.close()
        if not private_postgres.running:
            private_postgres.start()
    outputs = {name: p.output() for name, p in processes.items()}

    leaks = {
        "database password": private_postgres.password,
        "RPC key in the path": RPC_PATH_KEY,
        "RPC key in the query": RPC_QUERY_KEY,
        "Chainlink node key": ALCHEMY_KEY,
        "TronGrid key": TRONGRID_KEY,
        "CoinGecko key": COINGECKO_KEY,
        "CoinGecko key in the URL": COINGECKO_QUERY_KEY,
        "Redis password": REDIS_PASSWORD,
        "SMTP password": SMTP_PASSWORD,
        "webhook secret": webhook_secret,
        "webhook secret's key": webhook_secret.removeprefix("whsec_"),
    }
    texts = {**outputs, "response bodies": "\n".join(bodies)}
    found = [(what, where) for what, s in leaks.items() for where, t in texts.items() if s in t]
    assert found == [], found

    # The run went through the paths that used to print secrets.
    for framework in ("flask", "litestar"):
        assert f"postgres:***@127.0.0.1:{private_postgres.port}" in outputs[framework]
        assert "storage unavailable" in outputs[framework]
    # The node error: one line naming the endpoint by position, no URL to redact.
    assert "watcher pass failed: chain node" in outputs["worker"]
    assert "endpoint 1 of 1" in outputs["worker"]
    # Said once, on one line: a dead node is no traceback every pass (the watchers back off).
    assert "Traceback" not in outputs["worker"]
    assert "storage unavailable" in outputs["worker"]
    assert "failed (attempt" in outputs["worker"]  # the webhook deliveries
