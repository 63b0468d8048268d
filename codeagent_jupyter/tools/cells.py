"""Tools that run in the sandbox kernel: ``run_cell`` and ``run_command``.

Both sandboxes this package ships (local and gateway) run shell commands themselves
(``CellRunner.run_command``: under the cell's limits, output streamed, exit code read
back), so a sandbox without one is told so rather than given a second way to do it.
"""

from __future__ import annotations

from typing import Any

from ..core.ports import ExecResult, OutputCallback
from ..core.starting import StartingSandbox
from ..errors import ToolError


async def _require(sandbox: Any) -> Any:
    """The sandbox to run in, once it is ready (one still starting is waited for)."""
    if sandbox is None:
        raise ToolError("no sandbox is attached to this session; code cannot run")
    return await sandbox.ready() if isinstance(sandbox, StartingSandbox) else sandbox


async def run_cell(sandbox: Any, code: str, on_output: OutputCallback | None) -> ExecResult:
    return await (await _require(sandbox)).execute(code, on_output=on_output)


async def run_command(sandbox: Any, command: str, on_output: OutputCallback | None) -> ExecResult:
    run = getattr(await _require(sandbox), "run_command", None)
    if run is None:
        raise ToolError("this sandbox cannot run shell commands; use run_cell")
    return await run(command, on_output=on_output)
