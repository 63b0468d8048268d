"""Sandbox benchmark: start-up, pool hand-out, round-trip overhead, idle memory, file tools,
and what the disk budget's watch costs.

Run: ``python bench/sandbox.py [--cold 5] [--acquire 10] [--cells 200] [--files 300]
[--only files|gateway|disk] [--gateway]``. Prints Markdown tables measured in this run. The raw
baseline drives the stock ``python3`` kernel with jupyter_client directly, waiting for the
same messages ``Sandbox.execute`` waits for (the shell reply and the idle status), so the
ratio is our overhead. The file tool round trip reads and writes 1 KB and 1 MB through
``confined.Workspace`` (what the file tools use) and through plain ``open``. The gateway
column (``bench/sandbox_gateway.py``) compares the local backend with a real kernel gateway
on this machine. The disk table runs a CPU-bound cell (about a second of pure Python) and
``1+1`` with the workspace watch on and off (``disk_watch_s``), interleaved on one kernel
whose workspace holds ``--disk-files`` files, and quotes medians.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from jupyter_client import AsyncKernelManager

from codeagent_jupyter.sandbox import Sandbox, SandboxLimits, SandboxPool
from codeagent_jupyter.sandbox.disk import INTERVAL_S, DiskWatch
from codeagent_jupyter.util.confined import Workspace
from codeagent_jupyter.util.disk_budget import workspace_bytes

LIMITS = SandboxLimits(memory_mb=1024, cell_timeout=30)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


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


def timed(fn: Any, n: int) -> list[float]:
    for _ in range(min(20, n)):
        fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def file_round_trips(n: int) -> None:
    """Read and write 1 KB and 1 MB: confined (both resolutions) against plain ``open``."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "sub" / "dir").mkdir(parents=True)
        spaces = [Workspace(root, openat2=False)]
        if Workspace(root).resolution == "openat2":
            spaces.insert(0, Workspace(root))
        for size, label in ((1024, "1 KB"), (1 << 20, "1 MB")):
            data = os.urandom(size)
            rel = f"sub/dir/f{size}.bin"
            path = root / rel
            path.write_bytes(data)

            def plain_read(path: Path = path) -> bytes:
                with open(path, "rb") as f:
                    return f.read()

            def plain_write(path: Path = path, data: bytes = data) -> None:
                with open(path, "wb") as f:
                    f.write(data)

            for op, plain in (("read", plain_read), ("write", plain_write)):
                base = timed(plain, n)
                rows.append((f"{op} {label}: plain open()", base, ""))
                for ws in spaces:
                    if op == "read":
                        ours = timed(lambda ws=ws, rel=rel: ws.read_bytes(rel, 2 << 20), n)
                    else:
                        ours = timed(lambda ws=ws, rel=rel, d=data: ws.write_bytes(rel, d), n)
                    ratio = statistics.median(ours) / statistics.median(base)
                    name = f"{op} {label}: confined ({ws.resolution})"
                    rows.append((name, ours, f"x{ratio:.2f}"))
    print("| file tool round trip | p50 (ms) | p95 (ms) | vs plain open() p50 |")
    print("|---|---:|---:|---|")
    for name, times, note in rows:
        print(f"| {name} | {pct(times, 0.5) * 1000:.3f} | {pct(times, 0.95) * 1000:.3f} | {note} |")
    print()
    print(f"runs: files={n} (confined writes are temp file + rename, plain writes are in place)")


CPU_CELL = "s = 0\nfor i in range({n}):\n    s += i * i\ns"
"""A cell that only computes: the watch runs beside it, in the client's process."""


async def disk_watch_cost(rounds: int, cells: int, files: int) -> None:
    """The watch on and off, interleaved: CPU-bound cells, then ``1+1`` in blocks of 10."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i in range(files):  # a project-sized workspace: the walk is not free
            folder = root / f"d{i % 20}"
            folder.mkdir(exist_ok=True)
            (folder / f"f{i}.txt").write_bytes(b"x" * 1000)
        walks = timed(lambda: workspace_bytes(root), 50)
        setup = []  # what a cell shorter than the first interval pays: a timer, cancelled
        for _ in range(2000):
            t = time.perf_counter()
            watch = DiskWatch(root, LIMITS.disk_mb)
            watch.start()
            await watch.stop()
            setup.append(time.perf_counter() - t)
        async with Sandbox(workdir=root, limits=LIMITS) as sb:
            n = 200_000
            while True:  # calibrate the CPU-bound cell to about a second
                r = await sb.execute(CPU_CELL.format(n=n))
                if r.duration_s > 0.8 or n > 1 << 30:
                    break
                n *= 2
            code = CPU_CELL.format(n=n)
            cpu: dict[str, list[float]] = {"on": [], "off": []}
            ours: dict[str, list[float]] = {"on": [], "off": []}
            trips: dict[str, list[float]] = {"on": [], "off": []}
            for i in range(rounds):
                for mode in ("on", "off") if i % 2 == 0 else ("off", "on"):
                    sb.disk_watch_s = INTERVAL_S if mode == "on" else None
                    t, used = time.perf_counter(), time.process_time()
                    await sb.execute(code)
                    cpu[mode].append(time.perf_counter() - t)
                    ours[mode].append(time.process_time() - used)  # this process: the watch
            for i in range(max(cells // 10, 2)):
                for mode in ("on", "off") if i % 2 == 0 else ("off", "on"):
                    sb.disk_watch_s = INTERVAL_S if mode == "on" else None
                    for _ in range(10):
                        t = time.perf_counter()
                        await sb.execute("1+1")
                        trips[mode].append(time.perf_counter() - t)
    med = statistics.median
    rows = [
        ("CPU-bound cell", cpu, 1.0, "s", 3),
        ("Sandbox.execute 1+1", trips, 1000.0, "ms", 2),
    ]
    print("| disk watch (median) | watch off | watch on | on - off, paired (median) |")
    print("|---|---:|---:|---:|")
    for name, data, scale, unit, digits in rows:
        off, on = med(data["off"]) * scale, med(data["on"]) * scale
        paired = med([a - b for a, b in zip(data["on"], data["off"], strict=True)]) * scale
        diff = f"{paired:+.{digits}f} {unit} ({paired / off * 100:+.1f} %)"
        print(f"| {name} | {off:.{digits}f} {unit} | {on:.{digits}f} {unit} | {diff} |")
    off, on = med(ours["off"]) * 1000, med(ours["on"]) * 1000
    share = (on - off) / (med(cpu["on"]) * 1000) * 100
    print(
        f"| client CPU per CPU-bound cell | {off:.1f} ms | {on:.1f} ms | "
        f"{on - off:+.1f} ms ({share:+.2f} % of the cell's time) |"
    )
    print(f"| one workspace measure ({files} files) | {med(walks) * 1000:.2f} ms | | |")
    print(f"| watch set-up per cell (start + stop) | | {med(setup) * 1e6:.1f} us | |")
    print()
    print(
        f"runs: {rounds} CPU-bound cells and {len(trips['on'])} 1+1 per mode, interleaved; "
        f"watch every {INTERVAL_S} s while a cell runs"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, default=5, help="cold starts to time")
    parser.add_argument("--acquire", type=int, default=10, help="pool acquisitions to time")
    parser.add_argument("--cells", type=int, default=200, help="1+1 round trips to time")
    parser.add_argument("--files", type=int, default=300, help="file reads/writes to time")
    parser.add_argument("--rounds", type=int, default=11, help="CPU-bound cells per mode")
    parser.add_argument("--disk-files", type=int, default=500, help="files in the workspace")
    parser.add_argument(
        "--only", choices=["files", "gateway", "disk"], help="run just this section"
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
    print("| measure | p50 (ms) | p95 (ms) | note |")
    print("|---|---:|---:|---|")
    for name, p50, p95, note in rows:
        print(f"| {name} | {p50:.1f} | {p95:.1f} | {note} |")
    print(f"| idle RSS, sandbox (bwrap + kernel) | {our_rss:.0f} MiB | | |")
    print(f"| idle RSS, stock python3 kernel | {raw_rss:.0f} MiB | | |")
    print()
    print(f"runs: cold={args.cold} acquire={args.acquire} cells={args.cells}")
    print("enforcement:", ", ".join(f"{k}={v}" for k, v in sorted(enforcement.items())))
    print()
    file_round_trips(args.files)
    print()
    await disk_watch_cost(args.rounds, args.cells, args.disk_files)


if __name__ == "__main__":
    asyncio.run(main())
