"""The sandbox kernel: where model-written code runs, under limits, away from secrets.

``Sandbox`` is one stateful kernel; ``SandboxPool`` keeps a few started so a session
does not wait for a kernel to boot.

Imports are lazy because the kernel launcher (``python -m
codeagent_jupyter.sandbox.launcher``) imports this package first, and every
kernel start would otherwise pay for jupyter_client and nbformat.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config import SandboxLimits
    from ..core.ports import ExecResult
    from .kernel import Sandbox
    from .pool import SandboxPool

__all__ = ["ExecResult", "Sandbox", "SandboxLimits", "SandboxPool"]


def __getattr__(name: str) -> Any:
    if name == "Sandbox":
        from .kernel import Sandbox

        return Sandbox
    if name == "SandboxPool":
        from .pool import SandboxPool

        return SandboxPool
    if name == "SandboxLimits":
        from ..config import SandboxLimits

        return SandboxLimits
    if name == "ExecResult":
        from ..core.ports import ExecResult

        return ExecResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
