"""Tools that run in the sandbox kernel: ``run_cell`` and ``run_command``."""

from __future__ import annotations

import inspect
from typing import Any

from ..core.ports import ExecResult, OutputCallback
from ..core.starting import StartingSandbox
from ..errors import ToolError

# Runs a shell command from inside the kernel when the sandbox has no ``run_command`` of its
# own. It executes in a throw-away namespace (``exec(..., {})``) so no names leak into the
# user's variables, streams output line by line, and reports a non-zero exit status.
_SHELL_SNIPPET = """\
import subprocess, sys
p = subprocess.Popen(CMD, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                     stdin=subprocess.DEVNULL, text=True, errors="replace")
try:
    for line in p.stdout:
        sys.stdout.write(line)
    code = p.wait()
except BaseException:
    p.kill()
    raise
if code:
    print(f"[exit code {code}]")
"""


def shell_in_kernel_code(command: str) -> str:
    """Python source that runs ``command`` through the shell without touching the namespace."""
    snippet = _SHELL_SNIPPET.replace("CMD", repr(command), 1)
    return f"exec({snippet!r}, {{}})"


async def _require(sandbox: Any) -> Any:
    """The sandbox to run in, once it is ready (one still starting is waited for)."""
    if sandbox is None:
        raise ToolError("no sandbox is attached to this session; code cannot run")
    return await sandbox.ready() if isinstance(sandbox, StartingSandbox) else sandbox


async def run_cell(sandbox: Any, code: str, on_output: OutputCallback | None) -> ExecResult:
    return await (await _require(sandbox)).execute(code, on_output=on_output)


async def run_command(sandbox: Any, command: str, on_output: OutputCallback | None) -> ExecResult:
    sandbox = await _require(sandbox)
    own = getattr(sandbox, "run_command", None)
    if own is None:
        return await sandbox.execute(
            shell_in_kernel_code(command), on_output=on_output, store_history=False
        )
    if "on_output" in inspect.signature(own).parameters:
        return await own(command, on_output=on_output)
    return await own(command)
