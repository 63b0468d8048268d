"""The gateway column of ``bench/sandbox.py``: the same measures, local backend vs gateway.

Starts a real ``jupyter-kernelgateway`` on 127.0.0.1 (as the tests do) offering the
``codeagent-sandbox`` spec, then times, for each backend: a cold start, a warm pool
hand-out, the ``1+1`` round trip, the client CPU spent per second of a sleeping cell's
wall time (what waiting costs the server), and how long after a kernel is killed mid-cell
its ``died`` result arrives (the gateway runs with its default restarter settings).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codeagent_jupyter.sandbox import SandboxLimits, SandboxPool
from codeagent_jupyter.sandbox.backend import make_backend
from tests.gateway.conftest import start_gateway, stop_gateway

LIMITS = SandboxLimits(memory_mb=1024, cell_timeout=90)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(
    backend: Any, workdir: Path, cold: int, acquire: int, cells: int, deaths: int = 5
) -> dict:
    starts = []
    for _ in range(cold):
        box = backend.create(workdir, LIMITS)
        t = time.perf_counter()
        await box.start()
        starts.append(time.perf_counter() - t)
        await box.shutdown()
    pool = SandboxPool(size=2, workdir=workdir, limits=LIMITS, backend=backend)
    await pool.start()
    hand_outs = []
    try:
        for _ in range(acquire):
            while pool.status()["ready"] < 1:
                await asyncio.sleep(0.05)
            t = time.perf_counter()
            box = await pool.acquire()
            hand_outs.append(time.perf_counter() - t)
            await box.shutdown()
    finally:
        await pool.shutdown()
    async with backend.create(workdir, LIMITS) as box:
        for _ in range(20):
            await box.execute("1+1")
        trips = []
        for _ in range(cells):
            t = time.perf_counter()
            result = await box.execute("1+1")
            trips.append(time.perf_counter() - t)
            assert result.text == "2", result
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in range(3):
            await box.execute("import time; time.sleep(3)")
        cpu_share = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
        detections = [await detect_death(box) for _ in range(deaths)]
    return {
        "start": starts,
        "acquire": hand_outs,
        "execute": trips,
        "cpu": cpu_share,
        "died": detections,
    }


KILL = (
    "import os, time, threading\n"
    "threading.Timer(0.3, lambda: (print(time.time(), flush=True), os.kill(os.getpid(), 9)))"
    ".start()\n"
    "time.sleep(60)"
)
"""A cell killed mid-sleep; it prints the wall-clock time of the kill first."""


async def detect_death(box: Any) -> float:
    """Seconds from the kill (inside the kernel) to the ``died`` result here."""
    result = await box.execute(KILL)
    arrived = time.time()
    assert result.status == "died", result
    killed = float(result.text.split()[0])
    await box.execute("1")  # wait for the replacement kernel
    return arrived - killed


async def gateway_table(cold: int = 3, acquire: int = 5, cells: int = 200) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        gateway = start_gateway(Path(tmp))
        try:
            workdir = gateway.root / "bench"
            workdir.mkdir()
            local = await measure(make_backend("local"), workdir, cold, acquire, cells)
            remote_backend = make_backend("gateway", gateway.url, gateway.token)
            remote = await measure(remote_backend, workdir, cold, acquire, cells)
        finally:
            stop_gateway(gateway)
    ms = 1000.0
    print("| measure | local p50 (ms) | local p95 (ms) | gateway p50 (ms) | gateway p95 (ms) |")
    print("|---|---:|---:|---:|---:|")
    for key, name in (
        ("start", "cold start"),
        ("acquire", "pool.acquire() (warm)"),
        ("execute", "execute 1+1"),
        ("died", "kernel killed mid-cell -> died result"),
    ):
        a, b = local[key], remote[key]
        print(
            f"| {name} | {pct(a, 0.5) * ms:.1f} | {pct(a, 0.95) * ms:.1f} "
            f"| {pct(b, 0.5) * ms:.1f} | {pct(b, 0.95) * ms:.1f} |"
        )
    print(
        f"| client CPU per second of a sleeping cell | {local['cpu'] * 100:.1f}% | "
        f"| {remote['cpu'] * 100:.1f}% | |"
    )
    overhead = (statistics.median(remote["execute"]) - statistics.median(local["execute"])) * ms
    print()
    print(f"execute overhead of the gateway over local, p50: {overhead:+.2f} ms")
    print(f"runs: cold={cold} acquire={acquire} cells={cells} (gateway on 127.0.0.1)")


if __name__ == "__main__":
    asyncio.run(gateway_table())
