"""A session's state as a timeline of items, as frozen dataclasses.

``fold.reduce`` builds it from the session's events; the server answers from it (status,
cells that can be decided, approvals already given) and the panel draws it
(``widget/views.py``, ``widget/render.py``). Being frozen and compared by value, two states
can be checked for equality (a replayed session must equal the live one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..util.shell_cells import command_source
from .network import NetworkView

RUNNING = "running"


@dataclass(frozen=True)
class PromptItem:
    """A request: the first prompt (``run_index`` 0) or a follow-up."""

    key: str
    text: str
    run_index: int
    title: str = ""
    """How the request reads to people when ``text`` was written for the model (a fix)."""


@dataclass(frozen=True)
class NoteItem:
    """A line about the session itself, e.g. "restored from step 2 (3 cells re-run, 0.4 s)",
    with the problems that came with it."""

    key: str
    text: str
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class TextItem:
    """The model's text for one step: streamed deltas, then the complete message."""

    key: str
    step: int
    text: str
    is_answer: bool = False


@dataclass(frozen=True)
class CellItem:
    """A cell the agent ran (``run_cell``; ``run_command`` shown as a shell cell).

    ``number`` counts code cells across the session from 1, so ``%agent accept N`` can name
    one. ``fixes`` is the number of the failed cell this one followed, if any.
    """

    key: str
    tool_call_id: str
    step: int
    number: int
    tool: str
    code: str
    outputs: tuple[dict[str, Any], ...] = ()
    status: str = RUNNING  # running | ok | error | timeout | died | refused | denied
    execution_count: int | None = None
    duration_s: float = 0.0
    note: str = ""
    fixes: int | None = None
    decision: bool | None = None  # True accepted, False rejected, None undecided
    ran: bool = False
    """The code reached the sandbox (False while running, and for calls the tool refused)."""
    edit: dict[str, Any] | None = None
    """An ``edit_cell`` proposal (``code`` is then the new source of the user's cell)."""
    language: str = "python"
    """What ``code`` is (the tool's ``ToolTraits.language``): ``python`` or ``shell``."""

    @property
    def finished(self) -> bool:
        return self.status != RUNNING

    @property
    def ran_cleanly(self) -> bool:
        """What Accept all takes: cells that ran without error; failed attempts are skipped."""
        return self.status == "ok" and bool(self.code.strip())

    @property
    def notebook_source(self) -> str:
        """The source to put in the user's (Python) notebook."""
        return command_source(self.code) if self.language == "shell" else self.code


@dataclass(frozen=True)
class ToolItem:
    """Any other tool call (files, search): one line with its outcome."""

    key: str
    tool_call_id: str
    step: int
    name: str
    arguments: Any
    status: str = RUNNING
    result: str = ""
    diff: str = ""
    """For ``edit_file``: the unified diff of the change."""
    helpers: tuple[HelperGroup, ...] = ()
    """A ``delegate`` call's helpers, each with the state its own events fold to."""
    starts_agents: bool = False
    """The tool runs agents of its own (``ToolTraits.starts_agents``): shown with their groups."""

    @property
    def finished(self) -> bool:
        return self.status != RUNNING


@dataclass(frozen=True)
class HelperGroup:
    """One helper of a ``delegate`` call: its label (``"1-2"``), task and folded events."""

    child: str
    task: str
    state: SessionState

    @property
    def title(self) -> str:
        """``Helper 1-2: <task> · <status>``, one line (the panel's group header)."""
        task = " ".join(self.task.split())
        task = task if len(task) <= 80 else task[:79] + "…"
        return f"Helper {self.child}: {task} · {self.state.status}"


@dataclass(frozen=True)
class ApprovalItem:
    """A tool call waiting for (or given) the user's approval."""

    key: str
    tool_call_id: str
    step: int
    name: str
    arguments: Any
    approved: bool | None = None
    remember: str = ""
    """``"session"`` when the tool is allowed for the rest of the session."""


@dataclass(frozen=True)
class FinishedItem:
    """The end of a run: its status, the reason in words, and the answer if any."""

    key: str
    status: str
    reason: str
    answer: str | None
    steps: int
    duration_s: float


Item = PromptItem | NoteItem | TextItem | CellItem | ToolItem | ApprovalItem | FinishedItem


@dataclass(frozen=True)
class SessionState:
    """Everything the panel renders. ``last_seq`` is where a reconnect resumes (``since``)."""

    items: tuple[Item, ...] = ()
    plan: tuple[dict[str, str], ...] = ()
    status: str = "idle"  # idle (nothing yet) | running | a RunFinished status
    reason: str = ""
    model: str = ""
    step: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens_estimated: bool = False  # the server sent no usage for some request: counts guessed
    run_started_at: float | None = None
    run_finished_at: float | None = None
    retry: str = ""
    last_seq: int = -1
    enforcement: dict[str, Any] = field(default_factory=dict)
    price: dict[str, float] | None = None  # USD per million tokens, when the server has one
    preloaded: tuple[str, ...] | None = None
    """What the sandbox imported before the session (``pandas as pd``); None: not said."""
    network: NetworkView = field(default_factory=NetworkView)
    """Requests through the egress broker and hosts waiting for an answer (``network``)."""
    instructions: tuple[str, ...] = ()
    """The instruction files the runs follow (``AGENTS.md (312 bytes)``), as recorded."""

    @property
    def cost(self) -> float | None:
        """What the session's tokens cost so far, in USD (None without a price)."""
        if not self.price:
            return None
        return (
            self.prompt_tokens * self.price.get("input", 0.0)
            + self.completion_tokens * self.price.get("output", 0.0)
        ) / 1e6

    @property
    def running(self) -> bool:
        return self.status == RUNNING

    @property
    def cells(self) -> list[CellItem]:
        return [i for i in self.items if isinstance(i, CellItem)]

    def cell(self, tool_call_id: str) -> CellItem | None:
        return next((c for c in self.cells if c.tool_call_id == tool_call_id), None)

    def cell_number(self, number: int) -> CellItem | None:
        return next((c for c in self.cells if c.number == number), None)

    @property
    def prompt(self) -> str:
        """The session's first request (follow-ups are further ``PromptItem``s)."""
        return next((i.text for i in self.items if isinstance(i, PromptItem)), "")

    @property
    def title(self) -> str:
        """The first request's ``title`` (empty when the prompt is the user's own words)."""
        return next((i.title for i in self.items if isinstance(i, PromptItem)), "")

    def tool_call(self, tool_call_id: str) -> CellItem | ToolItem | None:
        """The timeline entry of a tool call that started or finished (None otherwise):
        the first, whose call owns the id (a later call reusing it was refused)."""
        for item in self.items:
            if isinstance(item, (CellItem, ToolItem)) and item.tool_call_id == tool_call_id:
                return item
        return None

    def approval(self, tool_call_id: str) -> ApprovalItem | None:
        return next(
            (
                i
                for i in self.items
                if isinstance(i, ApprovalItem) and i.tool_call_id == tool_call_id
            ),
            None,
        )

    @property
    def pending_approvals(self) -> list[ApprovalItem]:
        return [i for i in self.items if isinstance(i, ApprovalItem) and i.approved is None]

    def elapsed(self, now: float) -> float:
        """Seconds of the current (or last) run; ``now`` is only used while it runs."""
        if self.run_started_at is None:
            return 0.0
        end = self.run_finished_at if self.run_finished_at is not None else now
        return max(0.0, end - self.run_started_at)
