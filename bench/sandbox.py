"""Sandbox benchmark: start-up, pool hand-out, round-trip overhead, idle memory, file tools,
and what the disk budget's watch costs.

Run: ``python bench/sandbox.py [--cold 5] [--acquire 10] [--cells 200] [--files 300]
[--only files|gateway|disk|memory|zygote] [--gateway] [--counts 1,8,16]``. Prints Markdown tables
measured in this run. The raw baseline drives the stock ``python3`` kernel with
jupyter_client directly, waiting for the same messages ``Sandbox.execute`` waits for (the
shell reply and the idle status), so the ratio is our overhead. The file tool round trip
reads and writes 1 KB and 1 MB through ``confined.Workspace`` (what the file tools use) and
through plain ``open``. The gateway column (``bench/sandbox_gateway.py``) compares the
local backend with a real kernel gateway on this machine. The disk table runs a CPU-bound
cell (about a second of pure Python) and ``1+1`` with the lifelong disk guard on and off
(``disk_guard``), interleaved on one kernel whose workspace holds ``--disk-files`` files,
and quotes medians. The memory table (``sandbox_memory.py``) is PSS per idle sandbox with
numpy, pandas and matplotlib loaded, for ``--counts`` sandboxes at once, cold and forked
by a zygote; the zygote table (``sandbox_zygote.py``) times a request to a kernel ready with
them imported, cold against forked.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from _table import pct, table
from jupyter_client import AsyncKernelManager
from sandbox_disk import disk_watch_cost
from sandbox_files import file_round_trips
from sandbox_memory import memory_table
from sandbox_zygote import zygote_table

from codeagent_jupyter.sandbox import Sandbox, SandboxLimits, SandboxPool

LIMITS = SandboxLimits(memory_mb=1024, cell_timeout=30)


def tree_rss_mib(pid: int) -> float:
    """Resident memory of ``pid`` and all its descendants (bwrap + kernel)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            total += next(int(ln.split()[1]) for ln in status.splitlines() if ln[:6] == "VmRSS:")
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, StopIteration):
            continue
    return total / 1024


async def cold_start(workdir: Path, n: int) -> list[float]:
    times = []
    for _ in range(n):
        sb = Sandbox(workdir=workdir, limits=LIMITS)
        t = time.perf_counter()
        await sb.start()
        times.append(time.perf_counter() - t)
        await sb.shutdown()
    return times


async def cold_start_raw(n: int) -> list[float]:
    """The same measure for the stock python3 kernel: start and wait until it answers."""
    times = []
    for _ in range(n):
        km = AsyncKernelManager(kernel_name="python3")
        t = time.perf_counter()
        await km.start_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        kc = km.client()
        kc.start_channels()
        await kc.wait_for_ready(timeout=60)
        times.append(time.perf_counter() - t)
        kc.stop_channels()
        await km.shutdown_kernel(now=True)
    return times


async def pool_acquire(workdir: Path, n: int) -> list[float]:
    pool = SandboxPool(size=2, workdir=workdir, limits=LIMITS)
    await pool.start()
    times = []
    try:
        for _ in range(n):
            while pool.status()["ready"] < 1:  # measure the warm path, as in steady use
                await asyncio.sleep(0.05)
            t = time.perf_counter()
            sb = await pool.acquire()
            times.append(time.perf_counter() - t)
            await sb.shutdown()
    finally:
        await pool.shutdown()
    return times


async def sandbox_round_trips(workdir: Path, n: int) -> tuple[list[float], list[float], float]:
    """``Sandbox.execute`` timings, and bare-client timings on the same kernel (ipc)."""
    async with Sandbox(workdir=workdir, limits=LIMITS) as sb:
        for _ in range(20):
            await sb.execute("1+1")
        times = []
        for _ in range(n):
            t = time.perf_counter()
            r = await sb.execute("1+1")
            times.append(time.perf_counter() - t)
            assert r.text == "2", r
        same_kernel = await raw_loop(sb._kc, n)
        await asyncio.sleep(1)
        rss = tree_rss_mib(sb._km.provisioner.pid)
    return times, same_kernel, rss


async def raw_loop(kc: Any, n: int) -> list[float]:
    """``1+1`` through a bare jupyter_client: execute, wait for idle and the reply."""

    async def once() -> None:
        msg_id = kc.execute("1+1")
        while True:
            msg = await kc.get_iopub_msg(timeout=10)
            if (
                msg["parent_header"].get("msg_id") == msg_id
                and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"
            ):
                break
        while (await kc.get_shell_msg(timeout=10))["parent_header"].get("msg_id") != msg_id:
            pass

    for _ in range(20):
        await once()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        await once()
        times.append(time.perf_counter() - t)
    return times


async def raw_round_trips(n: int) -> tuple[list[float], float]:
    km = AsyncKernelManager(kernel_name="python3")
    await km.start_kernel(stderr=subprocess.DEVNULL)
    kc = km.client()
    kc.start_channels()
    await kc.wait_for_ready(timeout=60)
    try:
        times = await raw_loop(kc, n)
        await asyncio.sleep(1)
        rss = tree_rss_mib(km.provisioner.pid)
    finally:
        kc.stop_channels()
        await km.shutdown_kernel(now=True)
    return times, rss


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, default=5, help="cold starts to time")
    parser.add_argument("--acquire", type=int, default=10, help="pool acquisitions to time")
    parser.add_argument("--cells", type=int, default=200, help="1+1 round trips to time")
    parser.add_argument("--files", type=int, default=300, help="file reads/writes to time")
    parser.add_argument("--rounds", type=int, default=11, help="CPU-bound cells per mode")
    parser.add_argument("--disk-files", type=int, default=500, help="files in the workspace")
    parser.add_argument(
        "--only",
        choices=["files", "gateway", "disk", "memory", "zygote"],
        help="run just this section",
    )
    parser.add_argument(
        "--counts",
        default="1,8,16",
        help="sandboxes at once for the memory table, comma-separated (default: 1,8,16)",
    )
    parser.add_argument(
        "--gateway", action="store_true", help="add the gateway column (a real kernel gateway)"
    )
    args = parser.parse_args()
    if args.only == "files":
        file_round_trips(args.files)
        return
    if args.only == "disk":
        await disk_watch_cost(args.rounds, args.cells, args.disk_files)
        return
    counts = [int(c) for c in args.counts.split(",") if c.strip()]
    if args.only == "memory":
        await memory_table(counts)
        return
    if args.only == "zygote":
        await zygote_table(args.cold)
        return
    if args.only == "gateway" or args.gateway:
        from sandbox_gateway import gateway_table

        await gateway_table(cold=args.cold, acquire=args.acquire, cells=args.cells)
        if args.only == "gateway":
            return
        print()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        cold = await cold_start(workdir, args.cold)
        cold_raw = await cold_start_raw(args.cold)
        acquire = await pool_acquire(workdir, args.acquire)
        raw, raw_rss = await raw_round_trips(args.cells)
        ours, raw_ipc, our_rss = await sandbox_round_trips(workdir, args.cells)
        async with Sandbox(workdir=workdir, limits=LIMITS) as sb:
            enforcement = sb.enforcement

    ms = 1000.0
    rows = [
        ("cold start: Sandbox.start()", pct(cold, 0.5) * ms, pct(cold, 0.95) * ms, ""),
        ("cold start: stock python3 kernel", pct(cold_raw, 0.5) * ms, pct(cold_raw, 0.95) * ms, ""),
        ("pool.acquire() (warm)", pct(acquire, 0.5) * ms, pct(acquire, 0.95) * ms, ""),
        ("raw jupyter_client 1+1 (python3)", pct(raw, 0.5) * ms, pct(raw, 0.95) * ms, ""),
        (
            "Sandbox.execute 1+1",
            pct(ours, 0.5) * ms,
            pct(ours, 0.95) * ms,
            f"x{statistics.median(ours) / statistics.median(raw):.2f} of raw python3 p50, "
            f"{(statistics.median(ours) - statistics.median(raw)) * ms:+.2f} ms",
        ),
        (
            "raw jupyter_client 1+1, same sandbox kernel (ipc)",
            pct(raw_ipc, 0.5) * ms,
            pct(raw_ipc, 0.95) * ms,
            "Sandbox.execute overhead over this: "
            f"{(statistics.median(ours) - statistics.median(raw_ipc)) * ms:+.2f} ms p50",
        ),
    ]
    cells = [(name, f"{p50:.1f}", f"{p95:.1f}", note) for name, p50, p95, note in rows]
    cells.append(("idle RSS, sandbox (bwrap + kernel)", f"{our_rss:.0f} MiB", "", ""))
    cells.append(("idle RSS, stock python3 kernel", f"{raw_rss:.0f} MiB", "", ""))
    print(table(("measure", "p50 (ms)", "p95 (ms)", "note"), cells, "lrrl"))
    print()
    print(f"runs: cold={args.cold} acquire={args.acquire} cells={args.cells}")
    print("enforcement:", ", ".join(f"{k}={v}" for k, v in sorted(enforcement.items())))
    print()
    file_round_trips(args.files)
    print()
    await disk_watch_cost(args.rounds, args.cells, args.disk_files)
    print()
    await zygote_table(args.cold)
    print()
    await memory_table(counts)


if __name__ == "__main__":
    asyncio.run(main())
