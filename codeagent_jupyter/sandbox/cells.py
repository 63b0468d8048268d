"""What every sandbox backend offers on top of its own ``_run``: ``execute``, ``run_command``
and the workspace's disk budget, written once so the local and the gateway sandbox cannot
drift apart in what a cell or a shell command returns."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from ..protocols import ExecResult, OutputCallback
from .disk import disk_note

_SHELL_MOD = "codeagent_jupyter.sandbox.shell"


class CellRunner:
    """Mixin for a sandbox class with ``workdir``, ``limits``, ``_lock`` and ``_run``.

    ``_run(code, on_output, store_history, user_expressions, timeout)`` runs one cell and
    returns the result with the evaluated user expressions."""

    workdir: Path
    limits: SandboxLimits
    _lock: asyncio.Lock

    async def _run(
        self,
        code: str,
        on_output: OutputCallback | None,
        store_history: bool,
        user_expressions: dict[str, str],
        timeout: float | None = None,
    ) -> tuple[ExecResult, dict[str, Any]]:
        raise NotImplementedError

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
            result, _ = await self._run(code, on_output, store_history, {}, timeout)
            return self._check_disk(result)

    async def run_command(
        self, command: str, *, on_output: OutputCallback | None = None
    ) -> ExecResult:
        """Run a shell command inside the sandbox, under the same limits and timeout; its
        output streams to ``on_output`` as it comes, like a cell's."""
        code = f"__import__({_SHELL_MOD!r}, fromlist=['run']).run({command!r})"
        expr = f"__import__({_SHELL_MOD!r}, fromlist=['run']).last_exit_code"
        async with self._lock:
            result, exprs = await self._run(code, on_output, False, {"rc": expr})
        result.execution_count = None
        rc = exprs.get("rc", {}).get("data", {}).get("text/plain")
        if result.status == "ok" and rc not in (None, "0"):
            result.status = "error"
            result.note = f"exit code {rc}"
        return self._check_disk(result)

    def _check_disk(self, result: ExecResult) -> ExecResult:
        """Turn a cell that left the workspace over ``limits.disk_mb`` into an error (for a
        remote kernel: where the workspace is a shared volume visible here)."""
        if self.workdir.is_dir():
            note = disk_note(self.workdir, self.limits.disk_mb)
            if note:
                result.status = "error"
                result.note = f"{result.note}; {note}" if result.note else note
        return result
