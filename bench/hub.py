"""Benchmark: a class of students streaming through the gateway on a real JupyterHub.

    python bench/hub.py [--students 30] [--requests 5] [--delay 0.05]

Starts the scripted model (stand-in for the provider; each answer waits ``--delay`` seconds,
then streams) and a real JupyterHub with the gateway as a managed service (the test
fixture's hub). Every student sends ``--requests`` streamed chat requests one after another,
all students at once: first straight to the provider with the class key, then through the
gateway with their own hub token, at the service URL a student's server uses. Reports:

- completion: every request answered, every stream complete;
- latency to the last byte, direct vs through the gateway (p50/p95/max), and the
  difference, which is what the gateway adds (token check, policy, forwarding, ledger);
- ledger rows written = requests sent through the gateway.

Needs the ``jupyterhub`` package and ``configurable-http-proxy`` (npm).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._table import pct, table  # noqa: E402
from tests.hub.real_hub import CLASS_KEY, GATEWAY, STUDENTS, Hub  # noqa: E402
from tests.scripted_model import delay, text  # noqa: E402

ANSWER = "The mean of the column is 42.0; here is how I computed it step by step."


class Provider:
    """The scripted provider in its own process (so it does not share the benchmark's
    interpreter), answering every request after a fixed think time."""

    def __init__(self, seconds: float, turns: int, folder: Path) -> None:
        script = folder / "script.json"
        script.write_text(json.dumps([delay(seconds, text(ANSWER))] * turns))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.scripted_model", "--script", str(script)],
            stdout=subprocess.PIPE,
            cwd=REPO,
        )
        assert self.proc.stdout is not None
        self.server = self  # what the hub fixture reads: .server.url
        self.url = self.proc.stdout.readline().decode().strip()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


async def one(client: httpx.AsyncClient, url: str, key: str) -> float:
    """Seconds until the last byte of one streamed completion; checks it is whole."""
    body = {"model": "scripted", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    started = time.perf_counter()
    received = []
    headers = {"Authorization": f"Bearer {key}"}
    async with client.stream("POST", f"{url}/chat/completions", json=body, headers=headers) as r:
        assert r.status_code == 200, (r.status_code, await r.aread())
        async for chunk in r.aiter_text():
            received.append(chunk)
    whole = "".join(received)
    assert whole.rstrip().endswith("data: [DONE]"), whole[-200:]
    return time.perf_counter() - started


async def load(url: str, keys: list[str], requests: int) -> list[float]:
    """All students at once, each sending its requests one after another."""
    limits = httpx.Limits(max_connections=len(keys) * 2)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:

        async def student(key: str) -> list[float]:
            return [await one(client, url, key) for _ in range(requests)]

        per_student = await asyncio.gather(*(student(k) for k in keys))
    return [t for times in per_student for t in times]


SEQUENTIAL = 20
"""Requests of the one-student run (no contention: the gateway's own cost)."""


def rows(hub: Hub) -> int:
    with sqlite3.connect(hub.ledger_path) as db:
        return int(db.execute("SELECT COUNT(*) FROM usage").fetchone()[0])


def report(title: str, runs: dict[str, list[float]], expected: int) -> None:
    print(f"\n{title}\n")
    rows: list[tuple[object, ...]] = []
    for name, times in runs.items():
        p50, p95, top = (1000 * pct(times, q) for q in (0.5, 0.95, 1.0))
        rows.append((name, f"{len(times)}/{expected}", f"{p50:.1f}", f"{p95:.1f}", f"{top:.1f}"))
    direct, gateway = runs["provider directly"], runs["through the gateway"]
    added = [1000 * (pct(gateway, q) - pct(direct, q)) for q in (0.5, 0.95)]
    rows.append(("gateway adds", "", f"{added[0]:.1f}", f"{added[1]:.1f}", ""))
    print(table(("path", "answered", "p50 ms", "p95 ms", "max ms"), rows, "lllll"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=30)
    parser.add_argument("--requests", type=int, default=5)
    parser.add_argument("--delay", type=float, default=0.05)
    args = parser.parse_args()
    names = tuple(f"student{i:02d}" for i in range(args.students))
    total = args.students * args.requests
    with tempfile.TemporaryDirectory() as tmp:
        provider = Provider(args.delay, 2 * (total + SEQUENTIAL + 2), Path(tmp))
        hub = Hub(Path(tmp), provider, students=(*STUDENTS, *names))
        try:
            hub.start()
            tokens = [hub.login(name) for name in names]
            service = hub.admin("GET", f"/services/{GATEWAY}").json()
            via = f"{service['url'].rstrip('/')}/{service['prefix'].strip('/')}/v1"
            before = rows(hub)
            for url, keys in ((via, tokens[:2]), (provider.url, [CLASS_KEY] * 2)):
                asyncio.run(load(url, keys, 1))  # first connections, first token checks
            alone = {
                "provider directly": asyncio.run(load(provider.url, [CLASS_KEY], SEQUENTIAL)),
                "through the gateway": asyncio.run(load(via, tokens[:1], SEQUENTIAL)),
            }
            busy = {
                "provider directly": asyncio.run(
                    load(provider.url, [CLASS_KEY] * len(tokens), args.requests)
                ),
                "through the gateway": asyncio.run(load(via, tokens, args.requests)),
            }
            written = rows(hub) - before - 2
        finally:
            hub.stop()
            provider.stop()
    sent = SEQUENTIAL + len(busy["through the gateway"])
    print(f"\nprovider delay {args.delay * 1000:.0f} ms, streamed answers, latency to last byte")
    report(f"one student, {SEQUENTIAL} requests in a row", alone, SEQUENTIAL)
    report(f"{args.students} students x {args.requests} requests, all at once", busy, total)
    print(f"\nledger rows written: {written} (requests through the gateway: {sent})")
    if written != sent or len(busy["through the gateway"]) != total:
        sys.exit("bench: requests and ledger rows disagree")


if __name__ == "__main__":
    main()
