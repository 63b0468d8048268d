"""``ToolOutcome``: the one shape a tool call's result has, from the tool to the panel.

The sandbox reports outputs (``ExecResult``); the tool turns them into an outcome and renders
the model's text exactly once, here, bounded by ``AgentConfig.result_chars``; the loop sends
that text to the model and publishes ``ToolCallFinished.from_outcome(outcome)``, which the
recorder, the printer and the panel read. Refusals and errors are outcomes too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..events import ToolStatus
from ..util.disk_budget import OverBudget
from ..util.elision import Hint, elide_lines
from ..util.modeltext import clean_model_text
from ..util.textbounds import render_outputs
from .ports import ExecResult

DENIED_TEXT = (
    "The user denied this tool call; do not retry it unchanged. Ask or choose another way."
)


@dataclass
class ToolOutcome:
    """What one tool call came to. Fields are those of ``ToolCallFinished`` (``text`` is its
    ``result``), and ``plan``."""

    status: ToolStatus = "ok"
    """A cell's or command's own status (ok, error, timeout, died), or ``refused`` (a bad
    call) or ``denied`` (by the user or a hook): ``events.ToolStatus``."""
    text: str = ""
    """The text the model is shown: bounded, with the sandbox's note said once."""
    code: str | None = None
    """The source that ran (``run_cell``/``run_command``), else None."""
    outputs: list[dict[str, Any]] = field(default_factory=list)
    """The real nbformat outputs (bounded by the sandbox's ``output_bytes``)."""
    execution_count: int | None = None
    duration_s: float = 0.0
    note: str = ""
    """What the sandbox did beyond running the code (interrupt, restart, disk budget)."""
    plan: list[dict[str, str]] | None = None
    """The plan, for ``update_plan``; published as ``PlanUpdated``."""
    edit: dict[str, Any] | None = None
    """For ``edit_cell``: ``{cell_id, old_source, new_source, reason, diff}``; for
    ``edit_file``: ``{path, diff, replacements, old_string, new_string}``."""
    images: list[dict[str, Any]] = field(default_factory=list)
    """``image_url`` parts for a model that sees (bounded by the tool): the loop sends them
    in a user message after the step's tool results (not an event field: the outputs hold
    the images)."""
    packages: list[dict[str, Any]] | None = None
    """For ``install_packages``: each wheel installed (name, version, sha256, size, index)."""
    over_budget: OverBudget | None = None
    """Set when the call took the workspace over its disk budget: the run stops on it (not
    an event field; the note says it for the recording)."""

    @classmethod
    def refused(cls, text: str) -> ToolOutcome:
        """A call that did not run because it was malformed or the tool refused it."""
        return cls("refused", text)

    @classmethod
    def denied(cls) -> ToolOutcome:
        return cls("denied", DENIED_TEXT)

    @classmethod
    def failed(cls, text: str) -> ToolOutcome:
        return cls("error", text)

    @classmethod
    def of_execution(
        cls,
        res: ExecResult,
        code: str,
        limit: int,
        *,
        image_hint: str = "",
        hint: Hint | None = None,
        source: bool = False,
        workspace: str | None = None,
    ) -> ToolOutcome:
        """An execution's outcome, its model text rendered from the outputs (not ``res.text``,
        which the sandbox bounds for its own callers) within ``limit`` characters;
        ``image_hint`` follows each image's placeholder (shown below, or what to do instead).
        Output too long is cut between lines, the cut naming the hidden lines and how to see
        them: ``hint(first, last)`` (a ``read_file`` call for a file listing), or a slice;
        a Python ``source`` listing is cut at definition boundaries where it can be.
        Frames of files in ``workspace`` show paths relative to it.

        A failed cell starts with ``[cell status: …, after 1.2 s. note]``; a cell that
        succeeded ends with ``[ran 1.2 s. note]``: the note appears once either way.
        """
        body = render_outputs(res.outputs, image_hint=image_hint)
        body = (
            elide_lines(clean_model_text(body, workspace), limit, hint, source=source)
            or "(no output)"
        )
        took = _seconds(res.duration_s)
        note = f". {res.note}" if res.note else ""
        if res.status != "ok":
            text = f"[cell status: {res.status}, after {took}{note}]\n{body}"
        else:
            text = f"{body}\n[ran {took}{note}]"
        return cls(
            status=res.status,
            text=text,
            code=code,
            outputs=list(res.outputs),
            execution_count=res.execution_count,
            duration_s=res.duration_s,
            note=res.note,
            over_budget=res.over_budget,
        )


def _seconds(value: float) -> str:
    """``0.03 s``, ``1.2 s``, ``75 s``: how long a cell ran, as the model is told."""
    if value < 0.1:
        return f"{value:.2f} s"
    return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"
