"""What every sandbox backend offers on top of its own ``_run``: ``execute``, ``run_command``
and the workspace's disk budget (watched while the cell runs, checked after it), written
once so the local and the gateway sandbox cannot drift apart in what a cell or a shell
command returns."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from ..core.ports import ExecResult, OutputCallback
from ..util.disk_budget import RESERVED, OverBudget, measure_all
from .disk import INTERVAL_S, DiskWatch
from .disk_guard import Roots

_SHELL_MOD = "codeagent_jupyter.sandbox.shell"


class CellRunner:
    """Mixin for a sandbox class with ``workdir``, ``limits``, ``_lock`` and ``_run``.

    ``_run(code, on_output, store_history, user_expressions, timeout, watch)`` runs one cell
    and returns the result with the evaluated user expressions; it interrupts the cell once
    ``watch.over`` is set, as it does past the cell's timeout."""

    workdir: Path
    limits: SandboxLimits
    _lock: asyncio.Lock
    disk_watch_s: float | None = INTERVAL_S
    """Seconds between measures of the workspace while a cell runs (None: only after it)."""
    _guard: object | None = None
    """A lifelong ``DiskGuard`` (the local sandbox's): then no per-cell ``DiskWatch``."""

    def disk_roots(self) -> Roots:
        """Where the budget counts what the sandbox wrote: here, the workspace."""
        return [(self.workdir, frozenset({RESERVED}))]

    def crossed(self) -> OverBudget | None:
        """The budget a lifelong guard stopped the current call for (None: no guard)."""
        return None

    async def _run(
        self,
        code: str,
        on_output: OutputCallback | None,
        store_history: bool,
        user_expressions: dict[str, str],
        timeout: float | None = None,
        watch: DiskWatch | None = None,
    ) -> tuple[ExecResult, dict[str, Any]]:
        raise NotImplementedError

    async def _watched(
        self,
        code: str,
        on_output: OutputCallback | None,
        store_history: bool,
        user_expressions: dict[str, str],
        timeout: float | None = None,
    ) -> tuple[ExecResult, dict[str, Any]]:
        """``_run`` under a ``DiskWatch`` of the workspace (where it is visible here), and
        the disk budget checked once more after the cell."""
        watch = None
        if self.workdir.is_dir() and self._guard is None:
            watch = DiskWatch(self.workdir, self.limits.disk_mb, self.disk_watch_s)
            watch.start()
        try:
            result, exprs = await self._run(
                code, on_output, store_history, user_expressions, timeout, watch
            )
        finally:
            if watch is not None:
                await watch.stop()
        return self._check_disk(result, watch), exprs

    async def execute(
        self,
        code: str,
        *,
        on_output: OutputCallback | None = None,
        store_history: bool = True,
        timeout: float | None = None,
    ) -> ExecResult:
        """Run ``code`` in the kernel; it never raises for the code's own failures (the
        result says what happened: ok, error, timeout, died).

        ``timeout`` overrides ``limits.cell_timeout`` for this one cell.
        """
        async with self._lock:
            result, _ = await self._watched(code, on_output, store_history, {}, timeout)
            return result

    async def run_command(
        self, command: str, *, on_output: OutputCallback | None = None
    ) -> ExecResult:
        """Run a shell command inside the sandbox, under the same limits and timeout; its
        output streams to ``on_output`` as it comes, like a cell's."""
        code = f"__import__({_SHELL_MOD!r}, fromlist=['run']).run({command!r})"
        expr = f"__import__({_SHELL_MOD!r}, fromlist=['run']).last_exit_code"
        async with self._lock:
            result, exprs = await self._watched(code, on_output, False, {"rc": expr})
        result.execution_count = None
        rc = exprs.get("rc", {}).get("data", {}).get("text/plain")
        if result.status == "ok" and rc not in (None, "0"):
            result.status = "error"
            result.note = f"exit code {rc}"
        return result

    def _check_disk(self, result: ExecResult, watch: DiskWatch | None) -> ExecResult:
        """Turn a cell that took the workspace over ``limits.disk_mb`` (while it ran, or by
        the end) into an error that carries ``over_budget``, the typed reason the agent loop
        stops on. A remote kernel's workspace is checked where it is visible here (a shared
        volume). Under a lifelong guard, a note that already says the budget stopped the
        sandbox is kept as it is."""
        if result.over_budget is not None:
            return result
        if watch is None and (self._guard is None or not self.workdir.is_dir()):
            return result
        over = measure_all(self.disk_roots()).over(self.limits.disk_mb)
        crossed = watch.over if watch is not None else self.crossed()
        if crossed is not None and (over is None or over.used_bytes < crossed.used_bytes):
            over = crossed
        if over is None:
            return result
        result.status = "error"
        result.over_budget = over
        if crossed is not None and crossed.reason in result.note:
            result.over_budget = crossed  # the reason the note already gives
            return result
        note = over.reason + ("; the cell was interrupted" if crossed is not None else "")
        result.note = f"{result.note}; {note}" if result.note else note
        return result
