"""Ports: what the loop needs from a model, a sandbox and an event sink.

The core (``loop.py``) depends only on these, so any OpenAI-compatible endpoint, a
recorded transcript, a local or remote kernel, and any number of displays can be
plugged in without the loop knowing which.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..config import SandboxLimits
from ..events import Event
from ..util.disk_budget import OverBudget
from ..util.textbounds import render_outputs


@dataclass
class Usage:
    """Tokens of one request; ``estimated`` when the server sent no ``usage``."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False


@dataclass
class ModelReply:
    """One assistant turn: ``message`` in OpenAI chat form (role, content, tool_calls)."""

    message: dict[str, Any]
    usage: Usage = field(default_factory=Usage)


RetryCallback = Callable[[int, float, str], None]
"""Called as ``(attempt, wait_s, reason)`` before a retry wait."""


@runtime_checkable
class Model(Protocol):
    """A chat model that can call tools."""

    name: str
    base_url: str

    async def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_text: Callable[[str], None] | None = None,
        on_retry: RetryCallback | None = None,
    ) -> ModelReply:
        """Return the next assistant turn. Raises ``ModelError`` once retries are exhausted."""
        ...


@dataclass
class ExecResult:
    """What one cell execution produced.

    ``outputs`` are nbformat v4 output nodes (bounded by ``SandboxLimits.output_bytes``);
    ``text`` is their plain rendering; ``note`` says what the sandbox did beyond running
    the code (interrupt, restart, truncation). ``over_budget`` is set when the cell took the
    workspace over its disk budget: the run stops on it.
    """

    status: str  # "ok" | "error" | "timeout" | "died"
    outputs: list[dict[str, Any]] = field(default_factory=list)
    duration_s: float = 0.0
    execution_count: int | None = None
    note: str = ""
    over_budget: OverBudget | None = None

    @property
    def text(self) -> str:
        """The outputs as plain text (ANSI stripped, images and HTML as placeholders),
        unbounded: the one rendering there is. A tool bounds it for the model
        (``ToolOutcome.of_execution``)."""
        return render_outputs(self.outputs)


OutputCallback = Callable[[dict[str, Any]], None]


@runtime_checkable
class SandboxPort(Protocol):
    """A stateful kernel that runs untrusted code under limits (``sandbox.Sandbox`` is the
    one this package ships; the port is named apart so the two are never confused)."""

    workdir: Path
    limits: SandboxLimits
    enforcement: dict[str, Any]

    async def execute(
        self, code: str, *, on_output: OutputCallback | None = None, store_history: bool = True
    ) -> ExecResult:
        """Run ``code``; never raises for the code's own failures (see ``ExecResult.status``)."""
        ...

    async def interrupt(self) -> None:
        """Interrupt the cell that is running, if any (used by cancel)."""
        ...


@runtime_checkable
class EventSink(Protocol):
    """Receives every event of a session, in order. Must not block for long."""

    def emit(self, event: Event) -> None: ...
