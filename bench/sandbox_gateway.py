"""The gateway column of ``bench/sandbox.py``: the same measures, local backend vs gateway.

Starts a real ``jupyter-kernelgateway`` on 127.0.0.1 (as the tests do, default restarter
settings) offering the ``codeagent-sandbox`` spec, then times, for each backend: a cold
start, a warm pool hand-out, the ``1+1`` round trip, the client CPU spent per second of a
sleeping cell's wall time (what waiting costs the server), and how long after a kernel is
killed mid-cell its ``died`` result arrives.

The ``1+1`` round trips are interleaved (local, gateway over the binary v1 protocol, gateway
over the legacy JSON protocol, in turn), so that a busy machine slows all three alike; the
gateway process's own CPU per cell and a bare ``kernel_info`` round trip through it (the
gateway's hop with the least kernel work) are printed too.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._table import pct, table
from codeagent_jupyter.sandbox import SandboxLimits, SandboxPool
from codeagent_jupyter.sandbox.backend import make_backend
from codeagent_jupyter.sandbox.gateway_wire import GatewayWire
from tests.e2e.gateway.conftest import start_gateway, stop_gateway

LIMITS = SandboxLimits(memory_mb=1024, cell_timeout=60)
KILL = (
    "import os, time, threading\n"
    "print(time.time(), flush=True)\n"
    "threading.Timer(0.3, os.kill, (os.getpid(), 9)).start()\n"
    "time.sleep(50)"
)
"""A cell killed 0.3 s into a sleep; it prints the wall-clock time it started."""


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def lifecycle(backend: Any, workdir: Path, cold: int, acquire: int) -> dict[str, Any]:
    starts, hand_outs = [], []
    for _ in range(cold):
        box = backend.create(workdir, LIMITS)
        t = time.perf_counter()
        await box.start()
        starts.append(time.perf_counter() - t)
        await box.shutdown()
    pool = SandboxPool(size=2, workdir=workdir, limits=LIMITS, backend=backend)
    await pool.start()
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
    return {"start": starts, "acquire": hand_outs}


async def waiting_and_dying(box: Any, deaths: int) -> dict[str, Any]:
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(3):
        await box.execute("import time; time.sleep(3)")
    cpu = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    detections = []
    for _ in range(deaths):
        result = await box.execute(KILL)
        arrived = time.time()
        assert result.status == "died", result
        detections.append(arrived - float(result.text.split()[0]) - 0.3)
        await box.execute("1")  # wait for the replacement kernel
    return {"cpu": cpu, "died": detections}


async def round_trips(boxes: dict[str, Any], cells: int, gateway_pid: int) -> dict[str, Any]:
    """``1+1`` on every box in turn; the gateway's CPU per cell for each."""
    trips: dict[str, list[float]] = {name: [] for name in boxes}
    gateway_cpu = dict.fromkeys(boxes, 0.0)
    for i in range(cells + 20):
        for name, box in boxes.items():
            g0, t = process_cpu(gateway_pid), time.perf_counter()
            result = await box.execute("1+1")
            if i >= 20:  # warm-up first
                trips[name].append(time.perf_counter() - t)
                gateway_cpu[name] += process_cpu(gateway_pid) - g0
            assert result.text == "2", result
    hop: dict[str, list[float]] = {"local (ZMQ)": [], "gateway (v1)": []}
    kc = boxes["local"]._kc  # the local sandbox's jupyter_client, for the bare round trip
    for _ in range(cells):
        t = time.perf_counter()
        kc.control_channel.send(kc.session.msg("kernel_info_request"))
        await kc.get_control_msg(timeout=5)
        hop["local (ZMQ)"].append(time.perf_counter() - t)
        t = time.perf_counter()
        assert await boxes["gateway (v1)"].wire.kernel_info(5.0)
        hop["gateway (v1)"].append(time.perf_counter() - t)
    return {
        "execute": trips,
        "gateway_cpu": {k: v / cells for k, v in gateway_cpu.items()},
        "hop": hop,
    }


async def gateway_table(cold: int = 3, acquire: int = 5, cells: int = 200, deaths: int = 5) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        gateway = start_gateway(Path(tmp))
        try:
            workdir = gateway.root / "bench"
            workdir.mkdir()
            local_backend = make_backend("local")
            remote_backend = make_backend("gateway", gateway.url, gateway.token)
            life = {
                "local": await lifecycle(local_backend, workdir, cold, acquire),
                "gateway": await lifecycle(remote_backend, workdir, cold, acquire),
            }
            boxes = {
                "local": local_backend.create(workdir, LIMITS),
                "gateway (v1)": remote_backend.create(workdir, LIMITS),
                "gateway (JSON)": remote_backend.create(workdir, LIMITS),
            }
            boxes["gateway (JSON)"].wire = GatewayWire(gateway.url, gateway.token, binary=False)
            for box in boxes.values():
                await box.start()
            try:
                trips = await round_trips(boxes, cells, gateway.process.pid)
                late = {
                    "local": await waiting_and_dying(boxes["local"], deaths),
                    "gateway": await waiting_and_dying(boxes["gateway (v1)"], deaths),
                }
            finally:
                for box in boxes.values():
                    await box.shutdown()
        finally:
            stop_gateway(gateway)
    print_tables(life, trips, late)
    print(f"runs: cold={cold} acquire={acquire} cells={cells} deaths={deaths} (127.0.0.1)")


def print_tables(life: dict[str, Any], trips: dict[str, Any], late: dict[str, Any]) -> None:
    ms = 1000.0

    def p50_p95(values: list[float], digits: int = 1) -> tuple[str, str]:
        return f"{pct(values, 0.5) * ms:.{digits}f}", f"{pct(values, 0.95) * ms:.{digits}f}"

    pairs = (
        ("cold start", life["local"]["start"], life["gateway"]["start"]),
        ("pool.acquire() (warm)", life["local"]["acquire"], life["gateway"]["acquire"]),
        ("execute 1+1", trips["execute"]["local"], trips["execute"]["gateway (v1)"]),
        ("kernel killed mid-cell -> died result", late["local"]["died"], late["gateway"]["died"]),
    )
    rows: list[tuple[str, ...]] = [(name, *p50_p95(a), *p50_p95(b)) for name, a, b in pairs]
    local_cpu, gateway_cpu = (f"{late[side]['cpu'] * 100:.1f}%" for side in ("local", "gateway"))
    rows.append(("client CPU per second of a sleeping cell", local_cpu, "", gateway_cpu, ""))
    header = ("measure", "local p50 (ms)", "local p95 (ms)", "gateway p50 (ms)", "gateway p95 (ms)")
    print(table(header, rows))
    print()
    base = statistics.median(trips["execute"]["local"])
    rows = [
        (
            name,
            *p50_p95(values, 2),
            f"{(statistics.median(values) - base) * ms:+.2f}",
            f"{trips['gateway_cpu'][name] * ms:.2f}",
        )
        for name, values in trips["execute"].items()
    ]
    local_hop = statistics.median(trips["hop"]["local (ZMQ)"])
    for name, hop in trips["hop"].items():
        since = f"{(statistics.median(hop) - local_hop) * ms:+.2f}"
        rows.append((f"kernel_info on control, {name}", *p50_p95(hop, 2), since, ""))
    header = ("execute 1+1, interleaved", "p50 (ms)", "p95 (ms)", "vs local p50 (ms)")
    print(table((*header, "gateway CPU/cell"), rows))
    print()


if __name__ == "__main__":
    asyncio.run(gateway_table())
