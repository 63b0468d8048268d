"""CPU inside the sandbox kernel: a per-cell CPU budget and thread pools sized to the CPU share.

RLIMIT_CPU counts a process's CPU time over its whole life, so a fixed limit ends a long
interactive or agent session with SIGXCPU however short each cell was. ``CPUBudget``
re-arms the soft limit before each execution (CPU time used so far + the budget) and
turns SIGXCPU during a cell into ``CPUBudgetExceeded`` in that cell: the cell stops,
the kernel and its state stay. After the cell the limit is re-armed once more with
SIGXCPU's default action, so work a cell left running in the background (a thread
spinning between cells) gets one more budget and then ends the kernel, which the
client reports as a SIGXCPU death and restarts.

The budget stops runaway code, not code that sets out to lift it: the soft limit is the
process's own to raise. The client's wall-clock ``cell_timeout`` bounds an agent's cells
either way, and a long C call that never returns to Python is stopped by it too.
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
import signal
import threading
from pathlib import Path
from types import FrameType
from typing import Any

EXCEEDED_NAME = "CPUBudgetExceeded"
"""``ename`` of the error a cell ends with when it used up its CPU budget."""


class CPUBudgetExceeded(BaseException):
    """The running cell used more CPU time than the sandbox's per-cell budget.

    A ``BaseException``, like ``KeyboardInterrupt``, so that a broad ``except Exception``
    in the cell does not swallow it and keep burning CPU.
    """


def cpu_used() -> float:
    """CPU seconds (user + system, all threads) this process has used: what RLIMIT_CPU counts."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class CPUBudget:
    """Give each execution ``seconds`` of CPU time; install once, in the main thread."""

    def __init__(self, seconds: int) -> None:
        self.seconds = seconds

    def install(self, shell: Any) -> None:
        """Hook into an IPython shell's ``pre_execute``/``post_execute`` events.

        Those fire for every execution, silent ones included, in the main thread (the
        only thread that may set signal handlers).
        """
        shell.events.register("pre_execute", self._before_cell)
        shell.events.register("post_execute", self._after_cell)
        self._rearm()

    def _rearm(self) -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_CPU)
        soft = math.ceil(cpu_used()) + self.seconds
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))

    def _before_cell(self) -> None:
        self._rearm()
        self._on_signal(self._on_sigxcpu)

    def _after_cell(self) -> None:
        self._on_signal(signal.SIG_DFL)
        self._rearm()

    @staticmethod
    def _on_signal(handler: Any) -> None:
        # Only the main thread may set handlers; a cell in an ipykernel subshell runs in
        # another thread and keeps whatever the main thread has (the limit still holds).
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGXCPU, handler)

    def _on_sigxcpu(self, signum: int, frame: FrameType | None) -> None:
        """Raise in the cell; Linux repeats SIGXCPU each CPU second, so catching it buys little."""
        raise CPUBudgetExceeded(self.message)

    @property
    def message(self) -> str:
        """What the cell's error says (the agent reads it too)."""
        return (
            f"this cell used more than its CPU budget of {self.seconds} CPU seconds "
            "(the sandbox's cpu_seconds limit, per cell) and was stopped; "
            "the kernel and its variables are kept"
        )


def cpu_share() -> int:
    """CPUs this process may really use: its affinity, capped by a cgroup CPU quota."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    quota = _cgroup_cpu_quota()
    return max(1, min(cpus, math.ceil(quota)) if quota else cpus)


def _cgroup_cpu_quota() -> float | None:
    """CPUs allowed by the cgroup ``cpu`` controller (containers set this), if any."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    quotas = [q for q in map(_quota_of, lines) if q]
    return min(quotas) if quotas else None


def _quota_of(line: str) -> float | None:
    """The quota, in CPUs, of one ``/proc/self/cgroup`` line (v2: ``cpu.max``; v1: CFS)."""
    base = Path("/sys/fs/cgroup")
    try:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            quota, period = (base / path.lstrip("/") / "cpu.max").read_text().split()
        elif "cpu" in controllers.split(","):
            group = base / controllers / path.lstrip("/")
            quota = (group / "cpu.cfs_quota_us").read_text().strip()
            period = (group / "cpu.cfs_period_us").read_text().strip()
        else:
            return None
        if quota in ("max", "-1") or int(period) <= 0:
            return None
        return int(quota) / int(period)
    except (OSError, ValueError):
        return None


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""Environment variables that size OpenMP / OpenBLAS / MKL thread pools."""


def pool_threads(max_processes: int, memory_mb: int) -> int:
    """Threads per numeric thread pool: the CPU share, within the sandbox's limits.

    Every thread counts against ``max_processes``, and OpenBLAS reserves a buffer of
    about 32 MiB per thread against the memory limit, so on a many-core machine a pool
    of one thread per core would fail with "can't start new thread" or a memory error.
    """
    return max(1, min(cpu_share(), max_processes // 8, memory_mb // 128))
