"""Ports: what the loop needs from a model, a sandbox, an event sink, tool hooks and a
snapshot store.

The core (``loop.py``) depends only on these, so any OpenAI-compatible endpoint, a
recorded transcript, a local or remote kernel, any number of displays, the hook plugins
(``hooks/``) and the snapshot store (``record/``) can be plugged in without the loop, or a
tool, knowing which.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..config import SandboxLimits
from ..events import CellStatus, Event
from ..traits import ToolTraits
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
    finish_reason: str | None = None
    """Why the server ended the reply (``stop``, ``length``, ``tool_calls``), if it said."""


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

    status: CellStatus
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


@dataclass(frozen=True)
class ToolCall:
    """One tool call as hooks see it."""

    session_id: str
    step: int
    tool_call_id: str
    name: str
    arguments: dict[str, Any]
    traits: ToolTraits | None = None
    """What the tool is (its declaration's; ``UNKNOWN_TOOL`` for a tool that has none); None
    for a call built without them (read with ``events.traits_for``)."""
    code: str | None = None
    """What the call would run, as the tool shows it (a cell's code, a command)."""


class HookVerdict(Protocol):
    """What the hooks said before a call: the arguments to run with, or a denial."""

    arguments: dict[str, Any]

    @property
    def denied(self) -> bool: ...

    def outcome(self) -> Any:
        """The ``ToolOutcome`` the model is shown for a denied call."""
        ...


@runtime_checkable
class ToolHooks(Protocol):
    """Plugins around every well-formed tool call (``hooks.HookChain`` implements it)."""

    session_id: str

    async def before(self, call: ToolCall) -> HookVerdict: ...

    async def after(self, call: ToolCall, outcome: Any) -> Any:
        """The outcome as the hooks leave it (a ``ToolOutcome``)."""
        ...


class SnapshotPort(Protocol):
    """A workspace snapshot store (``record.snapshots.SnapshotStore``), as a tool needs it:
    helpers start from a capture of the parent's workspace and bring back what changed."""

    settings: Any
    """Has ``large_file_bytes``: files above it are referenced, not copied."""

    def capture(
        self, workdir: Path, previous: str | None = None, *, session: str | None = None
    ) -> Any:
        """A snapshot of ``workdir`` (``.id``; ``.changed`` since ``previous``)."""
        ...

    def restore(self, snapshot_id: str, target: Path, *, budget_mb: int | None = None) -> Any:
        """Write the snapshot's files into ``target``; ``DiskBudgetError`` if over budget."""
        ...
