"""Asking the person at the terminal before a tool runs outside the sandbox.

An MCP server's tool (or a plugin's host tool) runs with the CLI's own rights, so each call
is the user's decision: on a terminal the question names the tool and its arguments (shown,
never obeyed: control characters made visible, bounded) and only ``y`` runs it. Without a
terminal there is no approver and such a call is denied, saying how to approve it by flag.
Reading the answer runs off the event loop; one question at a time.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any, TextIO

from ..util.visible import visible

SHOWN_CHARS = 600
"""Characters of a call's arguments shown in the question."""


class TerminalToolApprover:
    """A runner ``Approver``: ``(tool_call_id, name, arguments) -> approved``."""

    def __init__(self, stdin: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self.stdin = stdin or sys.stdin
        self.stderr = stderr or sys.stderr
        self._lock = asyncio.Lock()

    async def __call__(self, call_id: str, name: str, arguments: Any) -> bool:
        async with self._lock:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(None, self._ask, name, arguments)

    def _ask(self, name: str, arguments: Any) -> bool:
        try:
            said = json.dumps(arguments, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            said = repr(arguments)
        if len(said) > SHOWN_CHARS:
            said = said[:SHOWN_CHARS] + "…"
        self.stderr.write(
            f"\nThe model asks to run {visible(name)} outside the sandbox with "
            f"{visible(said)}. Run it? [y/N]: "
        )
        self.stderr.flush()
        line = self.stdin.readline()
        return line.strip().lower() in ("y", "yes")


def tool_approver() -> TerminalToolApprover | None:
    """An approver when both stdin and stderr are terminals, else None (nobody to ask)."""
    try:
        if sys.stdin.isatty() and sys.stderr.isatty():
            return TerminalToolApprover()
    except (AttributeError, ValueError):
        pass
    return None
