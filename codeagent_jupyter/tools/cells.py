"""Tools that run in the sandbox kernel: ``run_cell`` and ``run_command``, declared here.

Both sandboxes this package ships (local and gateway) run shell commands themselves
(``CellRunner.run_command``: under the cell's limits, output streamed, exit code read
back), so a sandbox without one is told so rather than given a second way to do it.
"""

from __future__ import annotations

from typing import Any

from ..core.outcome import ToolOutcome
from ..core.ports import ExecResult, OutputCallback
from ..core.starting import StartingSandbox
from ..errors import ToolError
from ..traits import ToolTraits
from ..util.shell_cells import command_source
from . import listing, view
from ._schema import Tool, obj


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


def _outcome(box: Any, res: ExecResult, code: str, limit: int) -> ToolOutcome:
    """The outcome of a cell or command; a seeing model gets its images too."""
    hint = view.SHOWN_HINT if box.vision else view.BLIND_HINT
    outcome = ToolOutcome.of_execution(
        res,
        code,
        limit,
        image_hint=hint,
        hint=listing.hint_for(code),
        source=listing.lists_source(code),
        workspace=str(box.root),
    )
    if box.vision:
        outcome.images, total = view.images_of(res.outputs)
        if total > len(outcome.images):
            shown = f"only the first {len(outcome.images)} of {total} images are shown to you"
            outcome.text += f"\n[{shown}]"
    return outcome


async def _handle_run_cell(box: Any, *, code: str, on_output: Any, limit: int) -> ToolOutcome:
    return _outcome(box, await run_cell(box.sandbox, code, on_output), code, limit)


async def _handle_run_command(box: Any, *, command: str, on_output: Any, limit: int) -> ToolOutcome:
    return _outcome(box, await run_command(box.sandbox, command, on_output), command, limit)


RUN_CELL = Tool(
    "run_cell",
    "Run Python code in the persistent IPython kernel (a Jupyter cell). Variables, "
    "imports and files persist between calls; the working directory is the workspace. "
    "Returns printed output, the value of the last expression, the traceback if it "
    "fails, and how long it ran. Plots shown with plt.show() reach the user as images.",
    obj(["code"], code={"type": "string", "description": "Python source of the cell."}),
    _handle_run_cell,
    ToolTraits("kernel", writes_workspace=True, language="python", shown_as="cell"),
    code=lambda args: args["code"],
    cell=lambda args: args["code"],
    prompt="Run code with run_cell. Variables, imports and files persist between cells. Keep "
    "cells small and focused so the user can accept them one by one into their notebook. "
    "Each result says how long the cell ran.",
    prompt_rank=10,
)

RUN_COMMAND = Tool(
    "run_command",
    "Run a shell command in the sandbox (same limits and working directory as "
    "run_cell). Returns combined stdout and stderr and the exit status when non-zero. "
    "Use it for ls -la, wc, git, file conversions and similar; not for long-running "
    "servers. There is no network unless the administrator allowed it.",
    obj(["command"], command={"type": "string", "description": "Shell command line."}),
    _handle_run_command,
    ToolTraits("kernel", writes_workspace=True, language="shell", shown_as="cell"),
    code=lambda args: args["command"],
    cell=lambda args: command_source(args["command"]),
    prompt="run_command runs shell commands in the same sandbox; python, python3 and pip there "
    "are the kernel's own environment. There is no network unless told otherwise.",
    prompt_rank=20,
)
