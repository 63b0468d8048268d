"""A pool that follows demand: after a burst it keeps as many started sandboxes as were
handed out (up to its ceiling), and shrinks back to its floor once the burst is past."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from codeagent_jupyter.config import SandboxLimits
from codeagent_jupyter.sandbox import SandboxPool
from codeagent_jupyter.sandbox.demand import IDLE_SANDBOX_MB, Demand, ceiling

LIMITS = SandboxLimits(memory_mb=512, cell_timeout=30)


def test_the_target_follows_recent_hand_outs_within_bounds() -> None:
    demand = Demand(1, 3, window_s=10)
    assert demand.target(now=0) == 1
    for t in range(5):
        demand.record(now=t)
    assert demand.target(now=5) == 3  # five in the window, capped at the ceiling
    assert demand.target(now=14.5) == 1  # only t=4.5.. none left: back to the floor
    assert ceiling(1, None, None) == 1  # no pool_max: a fixed pool, as before
    assert ceiling(2, 16, 4 * IDLE_SANDBOX_MB) == 4  # the memory budget caps pool_max
    assert ceiling(2, 16, 10) == 2  # never below pool_size


async def _ready(pool: SandboxPool, count: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while pool.status()["ready"] != count:
        assert time.monotonic() < deadline, pool.status()
        await asyncio.sleep(0.2)


async def test_the_pool_grows_after_a_burst_and_shrinks_when_idle(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    async with SandboxPool(size=1, workdir=work, limits=LIMITS, max_size=2) as pool:
        burst = await asyncio.gather(*(pool.acquire() for _ in range(2)))
        await asyncio.gather(*(sb.shutdown() for sb in burst))
        await _ready(pool, 2)  # refilled to what the burst used, not to size=1
        pool.demand.window_s = 0.5  # the burst is now past the demand window
        await asyncio.sleep(1.0)
        await pool.trim()
        await _ready(pool, 1)
