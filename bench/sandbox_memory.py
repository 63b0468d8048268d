"""Memory you can count: PSS per idle sandbox with the data stack loaded, N at once.

RSS counts every shared page (the interpreter, numpy's and pandas' libraries) once per
process, so N sandboxes "use" N times what they really cost; PSS (proportional set size)
splits each shared page among the processes that map it, so the sum over every process of
N sandboxes is what the machine really gives them, and that sum divided by N is the cost of
one more. Read from ``/proc/PID/smaps_rollup`` for every process of each sandbox (bwrap, the
launcher, the kernel), summed. Each sandbox is a cold start that then imports numpy, pandas
and matplotlib (Agg, with one figure drawn), as a data scientist's first cell would, and
is measured idle. ``bench/sandbox.py --only memory --counts 1,8,16`` prints the table, for
cold starts and for sandboxes forked by one zygote (``sandbox.zygote``) that had imported
them already.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
import time
from pathlib import Path
from typing import Any

from _table import table

from codeagent_jupyter.sandbox import Sandbox, SandboxLimits
from codeagent_jupyter.sandbox.zygote_host import Zygote
from codeagent_jupyter.sandbox.zygote_manager import manager_class

LIMITS = SandboxLimits(memory_mb=1024, cell_timeout=120)
DATA_STACK = (
    "import matplotlib\n"
    "matplotlib.use('Agg')\n"
    "import numpy as np, pandas as pd, matplotlib.pyplot as plt\n"
    "df = pd.DataFrame({'x': np.arange(100)})\n"
    "plt.plot(df['x']); plt.close('all')\n"
)


def tree(pid: int) -> list[int]:
    """``pid`` and all its descendants."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def rollup_kib(pid: int, field: str) -> int | None:
    """``field`` (``Pss``, ``Rss``) of ``/proc/PID/smaps_rollup`` in KiB; None when it cannot
    be read (the process is gone, or not ours to read)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return None


def measure(pids: list[list[int]]) -> dict[str, float]:
    """Sums over every process of every sandbox, per sandbox (MiB)."""
    every = [p for group in pids for p in group]
    pss = [rollup_kib(p, "Pss") for p in every]
    rss = [rollup_kib(p, "Rss") for p in every]
    unread = sum(v is None for v in pss)
    n = len(pids)
    return {
        "pss": sum(v or 0 for v in pss) / 1024 / n,
        "rss": sum(v or 0 for v in rss) / 1024 / n,
        "processes": len(every) / n,
        "unread": unread,
    }


def zygote_groups(zygote: Zygote, sandboxes: list[Any]) -> list[list[int]]:
    """Each forked sandbox's processes (host pids), from the zygote's tree: a fork's pid in
    the zygote's namespace is the second field of ``NSpid``. The zygote itself is shared by
    all of them, so its processes are split among them (added to the first group: the sum
    over all groups is what counts)."""
    assert zygote.process is not None
    everything = tree(zygote.process.pid)
    by_inner: dict[int, int] = {}
    for pid in everything:
        with contextlib.suppress(OSError, StopIteration):
            status = Path(f"/proc/{pid}/status").read_text()
            fields = next(ln.split()[1:] for ln in status.splitlines() if ln.startswith("NSpid"))
            if len(fields) == 2:
                by_inner[int(fields[1])] = pid
    groups = [tree(by_inner[sb._km.pid]) for sb in sandboxes]
    forked = {p for group in groups for p in group}
    groups[0] += [p for p in everything if p not in forked]
    return groups


def make_sandbox(work: Path, zygote: Zygote | None) -> Sandbox:
    """A cold sandbox, or one forked by ``zygote``."""
    if zygote is None:
        return Sandbox(workdir=work, limits=LIMITS)
    return Sandbox(workdir=work, limits=LIMITS, kernel_manager_class=manager_class(zygote))


async def idle_with_data_stack(count: int, root: Path, start: str = "cold") -> dict[str, float]:
    """Start ``count`` sandboxes (one after another), load the data stack in each, let them
    settle, and measure them all together. ``start``: ``cold`` or ``zygote`` (one zygote
    for the ``count`` sandboxes, counted with them)."""
    sandboxes: list[Any] = []
    zygote = Zygote(root) if start == "zygote" else None
    if zygote is not None:
        zygote.start()
    try:
        for i in range(count):
            work = root / f"ws{start}{count}-{i}"
            work.mkdir()
            sb = make_sandbox(work, zygote)
            await sb.start()
            sandboxes.append(sb)
            result = await sb.execute(DATA_STACK)
            if result.status != "ok":
                raise RuntimeError(f"the data stack did not load: {result.text[-500:]}")
        await asyncio.sleep(2)  # idle: lazy frees and the kernel's own start-up settle
        if zygote is not None:
            return measure(zygote_groups(zygote, sandboxes))
        return measure([tree(sb._km.provisioner.pid) for sb in sandboxes])
    finally:
        await asyncio.gather(*(sb.shutdown() for sb in sandboxes), return_exceptions=True)
        if zygote is not None:
            zygote.close()


async def memory_table(
    counts: list[int], starts: tuple[str, ...] = ("cold", "zygote")
) -> dict[tuple[str, int], dict[str, float]]:
    """Print the table; returns the numbers by (start, N)."""
    results: dict[tuple[str, int], dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for start in starts:
            for count in counts:
                began = time.perf_counter()
                folder = Path(tmp) / f"{start}{count}"
                folder.mkdir()
                results[start, count] = await idle_with_data_stack(count, folder, start)
                results[start, count]["seconds"] = time.perf_counter() - began
    rows = [
        (
            f"{n} {start} sandbox{'es' if n > 1 else ''}",
            f"{r['pss']:.0f}",
            f"{r['rss']:.0f}",
            f"{r['pss'] * n:.0f}",
            f"{r['processes']:.0f}",
            f"{r['pss'] / results['cold', n]['pss']:.0%}" if ("cold", n) in results else "",
        )
        for (start, n), r in results.items()
    ]
    header = ("idle, numpy + pandas + matplotlib (Agg) loaded", "PSS per sandbox (MiB)",
              "RSS per sandbox (MiB)", "PSS, all (MiB)", "processes each",
              "PSS vs cold")  # fmt: skip
    print(table(header, rows))
    unread = sum(r["unread"] for r in results.values())
    if unread:
        print(f"\n{unread} process(es) could not be read (not counted): the sums are low")
    print(
        "\nPSS from /proc/PID/smaps_rollup, summed over each sandbox's processes (the "
        "zygote's own processes are counted with its sandboxes)"
    )
    return results
