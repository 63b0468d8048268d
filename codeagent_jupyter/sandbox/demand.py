"""How many started sandboxes the pool should hold: it follows recent demand.

A burst of sessions empties a fixed-size pool and the rest wait for cold kernels. The pool
therefore aims at the number of sandboxes handed out in the last ``window_s`` seconds,
between its floor (``pool_size``) and its ceiling (``pool_max``, itself bounded by a memory
budget), so a second burst finds them started; with no demand for a window, the target
falls back to the floor and the extra idle sandboxes are shut down (``SandboxPool.trim``).
"""

from __future__ import annotations

import time
from collections import deque

IDLE_SANDBOX_MB = 150
"""What one started, idle sandbox is counted as against ``pool_memory_mb`` (an idle
ipykernel with numpy, pandas and pyplot imported is about this size)."""


def ceiling(pool_size: int, pool_max: int | None, memory_mb: float | None) -> int:
    """The most sandboxes the pool may hold: ``pool_max`` (default: ``pool_size``) and no
    more than the memory budget allows, never below ``pool_size``."""
    high = pool_size if pool_max is None else max(pool_size, pool_max)
    if memory_mb:
        high = min(high, max(pool_size, int(memory_mb // IDLE_SANDBOX_MB)))
    return high


class Demand:
    """Counts hand-outs in a sliding window; ``target()`` is that count, clamped."""

    def __init__(self, low: int, high: int, window_s: float = 60.0) -> None:
        self.low, self.high, self.window_s = low, max(low, high), window_s
        self._times: deque[float] = deque()

    def record(self, now: float | None = None) -> None:
        self._times.append(time.monotonic() if now is None else now)

    def target(self, now: float | None = None) -> int:
        now = time.monotonic() if now is None else now
        while self._times and now - self._times[0] > self.window_s:
            self._times.popleft()
        return min(self.high, max(self.low, len(self._times)))
