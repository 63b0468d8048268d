"""Session notebooks: an agent run recorded as a valid, re-executable nbformat v4.5 notebook.

``NotebookRecorder`` is an event sink. It turns events into cells as they arrive and rewrites
the file atomically (temp file in the same directory, then ``os.replace``) after every event
that completes something, so a killed process leaves the last complete step on disk.

Layout (what a notebook viewer shows):

- the request as a markdown cell (``**Request:** …``), one per run (follow-ups append);
- the plan as a markdown checklist each time it changes; the model's text as markdown;
- ``run_cell`` as a code cell with its real outputs and execution count;
- ``run_command`` as a code cell ``!command`` (``%%bash`` when the command spans lines or
  uses ``$``/braces, which ``!`` would expand) and ``write_file`` as a ``%%writefile path``
  code cell, so re-running the notebook in IPython recreates the files and shell effects the
  later cells depend on (``%%writefile`` ends the file with a newline if it had none);
- read/list/search calls, refused or denied calls as a one-line markdown note;
- a markdown note when a run stops without an answer.

Every cell carries ``metadata.codeagent`` (kind, run, step, tool_call_id, tool, status,
duration_s, note, accepted). The notebook's ``metadata.codeagent`` holds the session: format
version, model, base URL, limits and their enforcement, usage, timings, per-run status, the
assistant turns (``transcript``, enough to replay without a model) and a compact event log
from which ``eventlog.decode_notebook`` rebuilds the events (outputs and code are not stored
twice: log entries point at their cell). Strings that look like credentials are scrubbed
(``redact.py``).
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_notebook

from .. import events as ev
from ..util.atomic import remove_stale, write_atomic
from ..util.nbschema import new_code_cell, new_markdown_cell, validate
from ..util.redact import scrub
from .eventlog import NOT_LOGGED, encode, sent_arguments
from .helper_sections import HelperSections, is_helper_cell
from .nbtext import NotebookText
from .network_cell import NetworkSection
from .notebook_cells import OUTPUT_CAP, cell_source, clean_outputs, plan_markdown, tool_note
from .reader import SessionRecord, load_session, read_session

__all__ = ["OUTPUT_CAP", "NotebookRecorder", "SessionRecord", "load_session", "scrub"]

IGNORED_EVENTS: frozenset[type[ev.Event]] = frozenset(
    {
        ev.TextDelta,
        ev.CellOutput,
        ev.ModelRetry,
        ev.ModelNote,
        ev.ApprovalRequested,
        ev.ApprovalDecided,
        ev.NetworkApprovalRequested,
        ev.NetworkApprovalDecided,
        ev.SessionRestored,
    }
)
"""Events that make no cell: live display only (``NOT_LOGGED``), or kept in the event log
alone (a retry, a note, an approval, a restore: the log is what a replay folds). Every other
event has its ``case`` in ``emit`` (``tests/core/test_sinks_cover_events.py``)."""
_NO_SAVE = {"tool_call_started", "usage", "model_retry", "model_note", "network_request"}
"""Events saved with the next step, not on their own (a cell may make many requests)."""
SAVE_WITHIN = 8
"""A deferred save waits at most this many ``save_delay``s after its first unsaved step."""


def _mid_step(event: ev.Event) -> bool:
    """Events whose step is still in flight: the tool call that ends the step saves them."""
    if isinstance(event, ev.AssistantMessage):
        return bool(event.message.get("tool_calls"))
    return isinstance(event, ev.PlanUpdated)


class NotebookRecorder:
    """Event sink that keeps ``path`` an up-to-date session notebook."""

    def __init__(
        self,
        path: Path | None,
        *,
        session_id: str | None = None,
        on_saved: Callable[[Path, str], None] | None = None,
        save_delay: float | None = None,
    ) -> None:
        self.path = Path(path) if path is not None else None
        """None: kept in memory only (a helper's cells for its parent's notebook)."""
        self.on_saved = on_saved
        """Called with the path and the exact text after each save (e.g. to sign it)."""
        self.save_delay = save_delay
        """Seconds without a completed step after which the steps so far are saved, in one
        save (``None``: each step saved at once); within ``SAVE_WITHIN`` times that of the
        first unsaved step at the latest. An MCP session's steps are its client's calls: the
        save (and its signature) then happens in the pause after a reply, not before it,
        and a burst of calls costs one save; a killed process loses at most the unsaved
        calls. The end of a run is always saved at once; ``flush`` saves what is pending."""
        self._pending: asyncio.TimerHandle | None = None
        self._due_by = 0.0
        self._started: dict[str, ev.ToolCallStarted] = {}
        self._text = NotebookText()
        self._network = NetworkSection()
        if self.path is not None and self.path.exists():
            self.notebook = read_session(self.path)
            self._meta: dict[str, Any] = self.notebook.metadata["codeagent"]
        else:
            self.notebook = new_notebook()
            self.notebook.metadata["kernelspec"] = {
                "name": "python3",
                "display_name": "Python 3",
                "language": "python",
            }
            self.notebook.metadata["language_info"] = {"name": "python"}
            self._meta = {
                "format_version": ev.FORMAT_VERSION,
                "session_id": session_id or uuid.uuid4().hex,
                "usage": {"prompt_tokens": 0, "completion_tokens": 0, "requests": 0},
                "runs": [],
                "transcript": [],
                "events": [],
            }
            self.notebook.metadata["codeagent"] = self._meta
            self._meta = self.notebook.metadata["codeagent"]  # the node copies what it is given
        self.session_id: str = self._meta["session_id"]
        nbformat.validate(self.notebook)
        if self.path is not None:
            remove_stale(self.path)
        self._sections = HelperSections(
            self.notebook,
            lambda: max(len(self._meta["runs"]) - 1, 0),
            lambda: type(self)(None),
        )

    # -- the sink ---------------------------------------------------------------------------

    def emit(self, event: ev.Event) -> None:
        """Record ``event``; the file is rewritten when a step (or a run) is complete.

        A killed process therefore loses at most the step in flight, and a step costs
        one write rather than one per event.
        """
        if event.type in NOT_LOGGED:
            return  # live display only: the finished tool call carries the outputs
        entry = scrub(event.to_dict())  # a scrubbed copy; the cells are made from it too
        event = ev.Event.from_dict(entry)
        saves = event.type not in _NO_SAVE and not _mid_step(event)
        cell = None
        match event:
            case ev.HelperEvent():
                inner = event.inner()
                if inner is None or inner.type in NOT_LOGGED:
                    return
                cell = self._sections.add(event, inner)
                saves = inner.type not in _NO_SAVE and not _mid_step(inner)
            case ev.RunStarted():
                cell = self._run_started(event)
            case ev.PlanUpdated():
                cell = self._plan_updated(event)
            case ev.AssistantMessage():
                cell = self._assistant_message(event)
            case ev.ToolCallStarted():
                self._started[event.tool_call_id] = event
            case ev.ToolCallFinished():
                cell = self._tool_call_finished(event)
            case ev.UsageUpdated():
                self._usage(event)
            case ev.RunFinished():
                cell = self._run_finished(event)
            case ev.CellDecision():
                self._cell_decision(event)
            case ev.PackagesInstalled():
                cell = self._packages_from_panel(event)
            case ev.NetworkRequest():
                cell = self._network_request(event)
        self._meta["events"].append(encode(entry, cell, self._meta["transcript"]))
        if saves:
            self._save_soon(at_once=isinstance(event, ev.RunFinished))

    def _save_soon(self, *, at_once: bool) -> None:
        if self.save_delay is None or at_once:
            self.flush()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no event loop to save later from
            self.save()
            return
        if self._pending is None:
            self._due_by = loop.time() + SAVE_WITHIN * self.save_delay
        elif loop.time() + self.save_delay < self._due_by:
            self._pending.cancel()  # more steps are coming: wait for the pause after them
        else:
            return
        self._pending = loop.call_later(self.save_delay, self.flush)

    def flush(self) -> None:
        """Save now, and drop any save that was waiting."""
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        self.save()

    def save(self) -> None:
        """Write the notebook atomically: temp file in the same directory, then rename.

        Cells are validated when added and serialised once (``nbtext``), so a save costs
        about the size of the session metadata, not of all outputs so far.
        """
        if self.path is None:
            return
        text = self._text.text(self.notebook)
        write_atomic(self.path, text)
        if self.on_saved is not None:
            self.on_saved(self.path, text)

    # -- one method per event (returns the cell it created, if any) ----------------------------

    def _run_started(self, e: ev.RunStarted) -> Any:
        for key in ("model", "base_url", "workdir", "limits", "enforcement", "config"):
            self._meta[key] = copy.deepcopy(getattr(e, key))
        self._meta.setdefault("timings", {"started": e.time})
        self._meta["status"], self._meta["reason"] = "running", ""
        run = {"run_index": e.run_index, "prompt": e.prompt, "started": e.time, "status": "running"}
        self._meta["runs"].append(run)
        self._meta["transcript"].append([])
        return self._add(new_markdown_cell(f"**Request:** {e.prompt}"), kind="prompt")

    def _plan_updated(self, e: ev.PlanUpdated) -> Any:
        return self._add(new_markdown_cell(plan_markdown(e.steps)), kind="plan")

    def _assistant_message(self, e: ev.AssistantMessage) -> Any:
        self._turns().append(copy.deepcopy(e.message))
        text = e.message.get("content") or ""
        if isinstance(text, list):  # content parts
            text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
        if not text.strip():
            return None
        kind = "message" if e.message.get("tool_calls") else "answer"
        return self._add(new_markdown_cell(text), kind=kind, step=e.step)

    def _tool_call_finished(self, e: ev.ToolCallFinished) -> Any:
        started = self._started.pop(e.tool_call_id, None)
        args = started.arguments if started is not None else None
        if started is None:  # refused or denied before it started: show what the model sent
            args = sent_arguments(self._turns(), e.tool_call_id)
        raw = args if isinstance(args, str) else None
        args = args if isinstance(args, dict) else {}
        meta: dict[str, Any] = {"tool_call_id": e.tool_call_id, "tool": e.name, "status": e.status}
        meta |= {"duration_s": round(e.duration_s, 3), "note": e.note}
        if e.packages:
            meta["packages"] = copy.deepcopy(e.packages)
            self._packages_installed(e)
        if e.tool.shown_as == "plan" and e.status == "ok":
            return None  # the plan_updated cell shows it
        source = cell_source(started, e)
        if e.tool.writes_workspace and e.edit:  # a file's edit: its diff
            meta["diff"] = e.edit.get("diff", "")
        if source is None:
            text = tool_note(e.name, e.status, args, raw, e.result)
            return self._add(new_markdown_cell(text), kind="tool", step=e.step, **meta)
        cell = new_code_cell(source, execution_count=e.execution_count)
        cell.outputs = clean_outputs(e.outputs)
        return self._add(cell, kind="tool", step=e.step, **meta)

    def _packages_installed(self, e: ev.ToolCallFinished) -> None:
        """The session's installed set (``metadata.codeagent.packages``, one entry a name,
        the latest install winning), what a resume or a fork reinstalls."""
        run = max(len(self._meta["runs"]) - 1, 0)
        kept = {p.get("name"): p for p in self._meta.get("packages", [])}
        for package in e.packages or []:
            kept[package.get("name")] = {**copy.deepcopy(package), "run": run, "step": e.step}
        self._meta["packages"] = list(kept.values())

    def _packages_from_panel(self, e: ev.PackagesInstalled) -> Any:
        """An install between runs: in the installed set as of the next run's start (a
        fork within an earlier run does not get it), and as a note in the notebook."""
        run = len(self._meta["runs"])
        kept = {p.get("name"): p for p in self._meta.get("packages", [])}
        for package in e.packages:
            kept[package.get("name")] = {**copy.deepcopy(package), "run": run, "step": 0}
        self._meta["packages"] = list(kept.values())
        note = f"**{e.summary()}.**" + (f" {e.reason}" if e.reason else "")
        cell = new_markdown_cell(note)
        cell.metadata["codeagent"] = {
            "run": run,
            "kind": "install",
            "packages": copy.deepcopy(e.packages),
        }
        nbformat.validate(cell, ref="markdown_cell", version=4)
        self.notebook.cells.append(cell)
        return cell

    def _usage(self, e: ev.UsageUpdated) -> None:
        usage = self._meta["usage"]
        usage["prompt_tokens"] += e.prompt_tokens
        usage["completion_tokens"] += e.completion_tokens
        usage["requests"] = usage.get("requests", 0) + 1
        if e.estimated:
            usage["estimated"] = True

    def _run_finished(self, e: ev.RunFinished) -> Any:
        run = self._meta["runs"][-1] if self._meta["runs"] else {}
        run |= {"status": e.status, "reason": e.reason, "finished": e.time}
        run |= {"duration_s": round(e.duration_s, 3), "steps": e.steps, "usage": dict(e.usage)}
        self._meta["status"], self._meta["reason"] = e.status, e.reason
        timings = self._meta.setdefault("timings", {"started": e.time})
        timings["finished"] = e.time
        timings["duration_s"] = round(sum(r.get("duration_s", 0.0) for r in self._meta["runs"]), 3)
        last = self.notebook.cells[-1] if self.notebook.cells else None
        answered = last is not None and last.metadata["codeagent"].get("kind") == "answer"
        if e.status == ev.ANSWERED and (answered or not e.answer):
            return None
        text = e.answer if e.status == ev.ANSWERED else f"**Stopped ({e.status}):** {e.reason}"
        return self._add(
            new_markdown_cell(text), kind="answer" if e.status == ev.ANSWERED else "stop"
        )

    def _network_request(self, e: ev.NetworkRequest) -> Any:
        """The run's Network cell: appended with its first request, then updated."""
        cell, new = self._network.add(e, max(len(self._meta["runs"]) - 1, 0))
        if new:
            return self._add(cell, kind="network")
        self._text.changed(cell.id)
        return None

    def _cell_decision(self, e: ev.CellDecision) -> None:
        cell = self._find(e.tool_call_id)
        if cell is not None:
            cell.metadata["codeagent"]["accepted"] = e.accepted
            self._text.changed(cell.id)

    # -- helpers ----------------------------------------------------------------------------

    def _turns(self) -> list[Any]:
        if not self._meta["transcript"]:
            self._meta["transcript"].append([])
        return self._meta["transcript"][-1]

    def _add(self, cell: Any, **meta: Any) -> Any:
        run = max(len(self._meta["runs"]) - 1, 0)
        cell.metadata["codeagent"] = {"run": run, **meta}
        validate(cell, ref=f"{cell.cell_type}_cell")
        self.notebook.cells.append(cell)
        return cell

    def _find(self, ident: str) -> Any:
        """The latest cell with this tool call id (ids may repeat across runs) or cell id."""
        for cell in reversed(self.notebook.cells):
            if is_helper_cell(cell):
                continue
            if cell.id == ident or cell.metadata.get("codeagent", {}).get("tool_call_id") == ident:
                return cell
        return None
