"""Request to a confined kernel ready with numpy, pandas and matplotlib imported: cold
start against a fork of the zygote (``sandbox.zygote``), measured in one run.

Each sample is one ``Sandbox``: from ``start()`` until the data scientist's first cell (the
imports, one DataFrame, one figure) has run. The cold start pays its interpreter and the
imports; the forked one finds them imported. ``bench/sandbox.py --only zygote [--cold N]``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from _table import pct, table
from sandbox_memory import DATA_STACK, make_sandbox

from codeagent_jupyter.sandbox.zygote_host import Zygote


async def ready_with_stack(root: Path, n: int, zygote: Zygote | None) -> list[float]:
    """``n`` samples of request -> kernel ready -> data stack loaded (seconds)."""
    times = []
    for i in range(n):
        work = root / f"{'zygote' if zygote else 'cold'}-{i}"
        work.mkdir()
        sb = make_sandbox(work, zygote)
        began = time.perf_counter()
        await sb.start()
        ready = time.perf_counter()
        result = await sb.execute(DATA_STACK)
        done = time.perf_counter()
        await sb.shutdown()
        if result.status != "ok":
            raise RuntimeError(f"the data stack did not load: {result.text[-500:]}")
        times.append((ready - began, done - began))
    return times


async def zygote_table(n: int) -> None:
    """Print cold vs zygote, medians and p95 over ``n`` samples each."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cold = await ready_with_stack(root, n, None)
        zygote = Zygote(root)
        began = time.perf_counter()
        zygote.start()
        warm_up = time.perf_counter() - began
        try:
            forked = await ready_with_stack(root, n, zygote)
        finally:
            zygote.close()
    ms = 1000.0
    rows = []
    for name, samples in (("cold start", cold), ("zygote fork", forked)):
        ready = [r for r, _ in samples]
        total = [t for _, t in samples]
        rows.append(
            (f"{name}: kernel ready", f"{pct(ready, 0.5) * ms:.0f}", f"{pct(ready, 0.95) * ms:.0f}")
        )
        rows.append(
            (
                f"{name}: ready + data stack loaded",
                f"{pct(total, 0.5) * ms:.0f}",
                f"{pct(total, 0.95) * ms:.0f}",
            )
        )
    print(table(("request -> confined kernel", "p50 (ms)", "p95 (ms)"), rows, "lrr"))
    cold_total = statistics.median(t for _, t in cold)
    fork_total = statistics.median(t for _, t in forked)
    print(
        f"\nruns: {n} each; ready + data stack, zygote vs cold: x{fork_total / cold_total:.2f}; "
        f"the zygote itself took {warm_up:.1f} s to start and import, once"
    )
