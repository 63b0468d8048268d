"""Resume and fork: what a session notebook says about the state after one of its steps.

A session is its notebook plus the workspace snapshots the notebook lists. ``plan`` reads
both and works out, for a cut point (the end, or step N), everything a new sandbox and a new
loop need: the snapshot of that step, the cells that ran successfully up to it (to rebuild
the kernel's variables), and the model conversation up to it (from the notebook's event
log, so the model sees exactly what it saw: its own messages and the tool results).

Steps are the numbers in the cells' ``metadata.codeagent.step``; they restart with each
follow-up run, so step N means step N of the *last* run that reached it (``run`` overrides).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import events as ev
from ..core.transcript import INTERRUPTED_CALL, answer_open_calls  # noqa: F401 (its name here)
from ..errors import ConfigError
from .eventlog import decode_notebook, plain
from .reader import read_session

"""The tool message for a call the notebook shows started but never finished."""


@dataclass
class ResumePlan:
    """What to rebuild: read from a session notebook by ``plan``."""

    path: Path
    notebook: Any
    session_id: str
    run: int
    """The run the cut is in."""
    step: int | None
    """The step the cut is after, or None: the end of the session."""
    workdir: Path | None
    """The workspace the session says it ran in (data: compared, never adopted)."""
    limits: dict[str, Any]
    """The limits the session says it ran under (data: they may only tighten)."""
    snapshot: dict[str, Any] | None
    """The notebook's entry of the last snapshot at or before the cut, if any."""
    cells: list[tuple[int, Any]] = field(default_factory=list)
    """(index, cell) of the code cells to run again, in order."""
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The model conversation up to the cut (no system message)."""
    runs: int = 0
    """Runs kept (the next run's index)."""
    last_seq: int = -1

    @property
    def cut_label(self) -> str:
        return "the end" if self.step is None else f"step {self.step}"


def plan(
    path: Path, step: int | None = None, run: int | None = None, notebook: Any = None
) -> ResumePlan:
    """Read ``path`` and plan a resume at the end, or a fork after ``step``.

    ``notebook``: the session as already read (and its signature checked) from ``path``,
    so that what is planned is exactly what was checked, not a second read of the file.
    ConfigError (one line) when the notebook is not a session or the step is not in it.
    Nothing read here is authority: ``limits`` and ``workdir`` are what the notebook *says*;
    callers only ever tighten their own limits with them and compare, never adopt, the
    workdir.
    """
    nb = read_session(Path(path)) if notebook is None else notebook
    meta = nb.metadata["codeagent"]
    runs = len(meta.get("runs", []))
    if runs == 0:
        raise ConfigError(f"{path} has no runs to resume from")
    cut_run = runs - 1 if run is None else run
    if step is not None:
        steps = _steps(nb)
        candidates = [r for r, s in steps if s == step and (run is None or r == run)]
        if not candidates:
            known = sorted({s for _, s in steps})
            raise ConfigError(
                f"step {step} is not in {path.name} (its steps: {', '.join(map(str, known))})"
            )
        cut_run = max(candidates)
    if not 0 <= cut_run < runs:
        raise ConfigError(f"run {cut_run} is not in {path.name} ({runs} runs)")
    events = decode_notebook(nb)
    workdir = next((e.workdir for e in events if isinstance(e, ev.RunStarted) and e.workdir), "")
    result = ResumePlan(
        path=Path(path),
        notebook=nb,
        session_id=str(meta.get("session_id", "")),
        run=cut_run,
        step=step,
        workdir=Path(workdir) if workdir else None,
        limits=plain(meta.get("limits") or {}),
        snapshot=_snapshot(meta.get("snapshots", []), cut_run, step),
        runs=cut_run + 1,
        last_seq=max((e.seq for e in events), default=-1),
    )
    result.cells = [
        (i, c) for i, c in enumerate(nb.cells) if _rerun(c) and _before(c, cut_run, step)
    ]
    result.messages = conversation(events, cut_run, step)
    return result


def conversation(events: list[ev.Event], run: int, step: int | None) -> list[dict[str, Any]]:
    """The messages the model had seen by the cut: prompts, its turns, the tool results.

    A tool call that never finished (the process was killed, the run's task cancelled) is
    answered with ``INTERRUPTED_CALL``, since the API rejects a call without its answer.
    """
    messages: list[dict[str, Any]] = []
    current = -1
    for event in events:
        if isinstance(event, ev.RunStarted):
            current = event.run_index
            if current > run:
                break
            answer_open_calls(messages)  # an earlier run cut off inside a call
            messages.append({"role": "user", "content": event.prompt})
            continue
        at = getattr(event, "step", None)
        if current == run and step is not None and at is not None and at > step:
            continue
        if isinstance(event, ev.AssistantMessage):
            answer_open_calls(messages)
            messages.append(plain(event.message))
        elif isinstance(event, ev.ToolCallFinished):
            messages.append(
                {"role": "tool", "tool_call_id": event.tool_call_id, "content": event.result}
            )
    answer_open_calls(messages)
    return messages


def _steps(nb: Any) -> list[tuple[int, int]]:
    found = set()
    for cell in nb.cells:
        meta = cell.metadata.get("codeagent", {})
        if isinstance(meta.get("step"), int) and not meta.get("child"):
            found.add((int(meta.get("run", 0)), meta["step"]))
    for entry in nb.metadata["codeagent"].get("snapshots", []):
        if entry.get("step"):
            found.add((entry.get("run", 0), entry["step"]))
    return sorted(found)


def _rerun(cell: Any) -> bool:
    meta = cell.metadata.get("codeagent", {})
    return (
        cell.cell_type == "code"
        and bool(meta.get("tool"))  # only a call that changed the workspace is a code cell
        and meta.get("status") == "ok"
        and not meta.get("child")  # a helper's cell ran in the helper's own sandbox
    )


def _before(cell: Any, run: int, step: int | None) -> bool:
    meta = cell.metadata.get("codeagent", {})
    cell_run = int(meta.get("run", 0))
    if cell_run != run:
        return cell_run < run
    return step is None or int(meta.get("step", 0)) <= step


def _snapshot(entries: list[Any], run: int, step: int | None) -> dict[str, Any] | None:
    """The last good snapshot entry at or before (run, step)."""
    chosen = None
    for entry in entries:
        if not entry.get("snapshot"):
            continue
        r, s = entry.get("run", 0), entry.get("step", 0)
        if r < run or (r == run and (step is None or s <= step)):
            chosen = plain(entry)
    return chosen
