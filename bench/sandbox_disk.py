"""What the disk budget's watch costs: a CPU-bound cell and ``1+1`` with the sandbox's
lifelong disk guard on and off, interleaved on one kernel whose workspace holds many files.
"Off" is the check after each cell alone; "on" is the guard (inotify on every folder, a
reconciling walk every few seconds) running for the kernel's whole life.

Part of ``bench/sandbox.py`` (``--only disk``); kept apart from the start-up and round-trip
tables, which measure the sandbox without the watch.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from _table import table
from sandbox_files import timed

from codeagent_jupyter.sandbox import Sandbox, SandboxLimits
from codeagent_jupyter.sandbox.disk import INTERVAL_S
from codeagent_jupyter.sandbox.disk_guard import WALK_S, DiskGuard
from codeagent_jupyter.util.disk_budget import workspace_bytes

LIMITS = SandboxLimits(memory_mb=1024, cell_timeout=30)
"""As in ``bench/sandbox.py``: the disk budget is the default one."""


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
        setup = []  # what a sandbox pays once: the guard's first walk, its watches
        for _ in range(20):
            guard = DiskGuard([(root, frozenset())], LIMITS.disk_mb, lambda over: None)
            t = time.perf_counter()
            guard.start()
            guard.settled.wait(30)
            setup.append(time.perf_counter() - t)
            guard.stop()
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
                    _guard(sb, mode == "on")
                    t, used = time.perf_counter(), time.process_time()
                    await sb.execute(code)
                    cpu[mode].append(time.perf_counter() - t)
                    ours[mode].append(time.process_time() - used)  # this process: the watch
            for i in range(max(cells // 10, 2)):
                for mode in ("on", "off") if i % 2 == 0 else ("off", "on"):
                    _guard(sb, mode == "on")
                    for _ in range(10):
                        t = time.perf_counter()
                        await sb.execute("1+1")
                        trips[mode].append(time.perf_counter() - t)
    med = statistics.median
    rows = [
        ("CPU-bound cell", cpu, 1.0, "s", 3),
        ("Sandbox.execute 1+1", trips, 1000.0, "ms", 2),
    ]
    cells: list[tuple[str, ...]] = []
    for name, data, scale, unit, digits in rows:
        off, on = med(data["off"]) * scale, med(data["on"]) * scale
        paired = med([a - b for a, b in zip(data["on"], data["off"], strict=True)]) * scale
        diff = f"{paired:+.{digits}f} {unit} ({paired / off * 100:+.1f} %)"
        cells.append((name, f"{off:.{digits}f} {unit}", f"{on:.{digits}f} {unit}", diff))
    off, on = med(ours["off"]) * 1000, med(ours["on"]) * 1000
    share = (on - off) / (med(cpu["on"]) * 1000) * 100
    diff = f"{on - off:+.1f} ms ({share:+.2f} % of the cell's time)"
    cells.append(("client CPU per CPU-bound cell", f"{off:.1f} ms", f"{on:.1f} ms", diff))
    cells.append((f"one workspace measure ({files} files)", f"{med(walks) * 1000:.2f} ms", "", ""))
    cells.append(("guard start (first walk + watches)", "", f"{med(setup) * 1000:.2f} ms", ""))
    header = ("disk watch (median)", "watch off", "watch on", "on - off, paired (median)")
    print(table(header, cells))
    print()
    print(
        f"runs: {rounds} CPU-bound cells and {len(trips['on'])} 1+1 per mode, interleaved; "
        f"guard: inotify, a reconciling walk every {WALK_S:g} s for the sandbox's life"
    )


def _guard(sb: Sandbox, on: bool) -> None:
    """The guard on (started, or kept) or off (stopped; the check after each cell stays)."""
    if on:
        sb.disk_watch_s = INTERVAL_S
        sb._start_guard()
        if sb._guard is not None:
            sb._guard.settled.wait(30)
    else:
        sb._stop_guard()
        sb.disk_watch_s = None
