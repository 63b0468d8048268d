"""The ``audit`` hook: one JSON line per tool call and what became of it.

An administrator who lets an agent act wants a record outside the session notebooks (which a
user may delete): every call, its arguments (credentials scrubbed), its status, and when a
hook or the user denied it, why. Lines are appended with ``O_APPEND``, one ``write`` each, so
several server processes can share the file.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from ..core.outcome import ToolOutcome
from ..events import NOT_RUN
from ..util.redact import scrub
from .base import ToolCall


def default_path() -> Path:
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "codeagent" / "audit.jsonl"


class AuditHook:
    """Appends ``{"time", "event", "session_id", "step", "tool_call_id", "tool",
    "arguments", "status", "reason"}`` lines to ``path`` (default: Jupyter's data dir)."""

    name = "audit"

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path else default_path()
        self._lock = threading.Lock()

    def after_tool(self, call: ToolCall, outcome: ToolOutcome) -> None:
        reason = outcome.text if outcome.status in NOT_RUN else ""
        self._write(
            {
                "event": "tool_call",
                "session_id": call.session_id,
                "step": call.step,
                "tool_call_id": call.tool_call_id,
                "tool": call.name,
                "arguments": call.arguments,
                "status": outcome.status,
                "reason": reason,
            }
        )

    def on_session_start(self, info: dict[str, Any]) -> None:
        self._write({"event": "session_start", **info})

    def on_session_end(self, info: dict[str, Any]) -> None:
        self._write({"event": "session_end", **info})

    def _write(self, record: dict[str, Any]) -> None:
        line = json.dumps(scrub({"time": time.time(), **record}), default=str) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)
