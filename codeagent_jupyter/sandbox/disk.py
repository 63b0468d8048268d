"""The workspace disk budget while a cell runs: measured every quarter second, off the loop.

RLIMIT_FSIZE bounds one file, not how many a cell writes, and a quota needs root and a
filesystem that has them, so the client measures the workspace itself (``disk_budget``:
apparent sizes, so sparse files count their length). Checking only after the cell let a
cell write as much as it liked for as long as it ran; ``DiskWatch`` measures while it runs
and tells the cell's wait loop as soon as the budget is crossed, which interrupts the cell
(then restarts the kernel if it does not stop).

What callers can rely on: a cell that ends before the first interval costs no measurement
at all (a timer, cancelled); each measure runs in a worker thread, so the server's event
loop never waits for a large tree; the interval stretches so that measuring takes at most
``MAX_SHARE`` of one CPU, whatever the workspace holds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path

from ..util.disk_budget import OverBudget, measure

INTERVAL_S = 0.25
"""Seconds between two measures of a small workspace while a cell runs."""
MAX_SHARE = 0.02
"""Most of one CPU the measures may take: a walk of ``t`` s waits ``t / MAX_SHARE`` s."""


class DiskWatch:
    """Measures one workspace while one cell runs; ``over`` is set once it passes its budget.

    ``on_over`` (optional) is called once, on the event loop, when that happens: a wait loop
    that sleeps on a queue uses it to wake up. ``interval_s`` None watches nothing (the
    check after the cell still happens).
    """

    def __init__(
        self,
        root: Path,
        budget_mb: int,
        interval_s: float | None = INTERVAL_S,
        on_over: Callable[[], None] | None = None,
    ) -> None:
        self.root = root
        self.budget_bytes = budget_mb * 1024 * 1024
        self.budget_mb = budget_mb
        self.interval_s = interval_s
        self.on_over = on_over
        self.over: OverBudget | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.interval_s is None:
            return
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self.interval_s, self._begin)

    def _begin(self) -> None:
        self._timer = None
        self._task = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        assert self.interval_s is not None
        while True:
            began = time.perf_counter()
            usage = await asyncio.to_thread(measure, self.root)
            took = time.perf_counter() - began
            over = usage.over(self.budget_mb)
            if over is not None:
                self.over = over
                if self.on_over is not None:
                    self.on_over()
                return
            await asyncio.sleep(max(self.interval_s, took / MAX_SHARE - took))

    async def stop(self) -> None:
        """End the watch (the cell is over); a measure in flight is abandoned."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
