"""A plain-text view of a run: the plan, each cell and how it went, retries and the stop.

It is just another event sink, so the CLI shows exactly what the notebook records. A step's
header and code are written when the call starts, its result when it ends. This is the
output for pipes, files and scripts (no colour, no control codes); ``terminal.py`` builds
the live view of a terminal on top of it.

Everything it writes passes ``visible`` on the way out (``_write``, ``_text_delta``): cell
output, the model's text and code, file names and diffs are someone else's bytes, and no
control character of theirs reaches the stream.
"""

from __future__ import annotations

import io
import sys
from typing import TextIO

from .. import events as ev
from ..util.textbounds import head_tail, render_outputs, strip_ansi
from ..util.visible import visible
from .file_steps import DIFF_INDENT, bounded, clip, count, edited_path, file_diff, title

_MARK = {"done": "[x]", "in_progress": "[~]", "pending": "[ ]"}


IGNORED_EVENTS: frozenset[type[ev.Event]] = frozenset(
    {ev.ApprovalDecided, ev.CellDecision, ev.NetworkApprovalRequested, ev.NetworkApprovalDecided}
)
"""Events the plain trace does not show: a decision shows as the call starting or as its
denial; a cell's acceptance happens in a notebook, after the run; a network question is a
server session's (the CLI asks on its terminal itself, and its answer shows as the request's
``net:`` line)
(``tests/core/test_sinks_cover_events.py`` holds every other event to a ``case``)."""


class ProgressPrinter:
    """Writes a compact, human-readable trace of the events to a stream (stderr by default)."""

    def __init__(self, stream: TextIO | None = None, *, code_lines: int = 12) -> None:
        self.stream = stream or sys.stderr
        self.code_lines = code_lines
        self._streaming = False
        self._announced: dict[str, bool] = {}
        """Calls whose header is written, and whether their code was written with it."""
        self._helpers: dict[str, ProgressPrinter] = {}
        self._written: dict[str, tuple[str, str]] = {}
        """Calls writing a whole file: its path and the content the model gave."""
        self._cells = self._other_calls = 0

    def emit(self, event: ev.Event) -> None:
        match event:
            case ev.RunStarted():
                self._run_started(event)
            case ev.PlanUpdated():
                self._plan_updated(event)
            case ev.TextDelta():
                self._text_delta(event)
            case ev.AssistantMessage():
                self._assistant_message(event)
            case ev.ModelRetry():
                self._model_retry(event)
            case ev.ModelNote():
                self._write(f"   note: {event.text}")
            case ev.ApprovalRequested():
                self._write(f"   waiting for approval of {event.name}")
            case ev.ToolCallStarted():
                self._tool_call_started(event)
            case ev.CellOutput():
                self._cell_output(event)
            case ev.UsageUpdated():
                self._usage(event)
            case ev.ToolCallFinished():
                self._tool_call_finished(event)
            case ev.RunFinished():
                self._run_finished(event)
            case ev.SessionRestored():
                self._write(f"== Session {event.summary}")
                for problem in event.problems:
                    self._write(f"   not rebuilt: {problem}")
            case ev.HelperEvent():
                self._helper_event(event)
            case ev.NetworkRequest():
                self._write(f"   net: {clip(event.summary())}")
            case ev.PackagesInstalled():
                self._write(f"== {clip(event.summary())}")

    def close(self) -> None:
        """Called once the run is over, whatever happened: nothing to undo in plain text."""

    def _write(self, text: str) -> None:
        if self._streaming:
            self.stream.write("\n")
            self._streaming = False
        self.stream.write(visible(text) + "\n")
        self.stream.flush()

    def _helper_event(self, e: ev.HelperEvent) -> None:
        """A helper's event, printed as its own trace would be, each line marked with it."""
        inner = e.inner()
        if inner is None or isinstance(inner, (ev.TextDelta, ev.CellOutput)):
            return  # helpers run at once: their streamed text would interleave
        helper = self._helpers.get(e.child)
        if helper is None:  # one plain printer per helper, so it knows its own calls
            helper = self._helpers[e.child] = ProgressPrinter(
                io.StringIO(), code_lines=self.code_lines
            )
        buffer = helper.stream
        assert isinstance(buffer, io.StringIO)
        helper.emit(inner)
        lines = buffer.getvalue().rstrip("\n").splitlines()
        buffer.seek(0)
        buffer.truncate()
        if lines:
            self._write("\n".join(f"   [helper {e.child}] {line}" for line in lines))

    def _run_started(self, e: ev.RunStarted) -> None:
        kind = "Follow-up" if e.run_index else "Request"
        self._write(f"== {kind}: {e.prompt}")
        if e.run_index == 0 and e.model:
            self._write(f"   model {e.model}" + (f" at {e.base_url}" if e.base_url else ""))

    def _plan_updated(self, e: ev.PlanUpdated) -> None:
        lines = [f"   {_MARK.get(s.get('status', ''), '[?]')} {s.get('step', '')}" for s in e.steps]
        self._write("-- Plan\n" + "\n".join(lines))

    def _text_delta(self, e: ev.TextDelta) -> None:
        self.stream.write(visible(e.text))
        self.stream.flush()
        self._streaming = True

    def _assistant_message(self, e: ev.AssistantMessage) -> None:
        if self._streaming:
            self._write("")
            return
        content = (e.message.get("content") or "").strip()
        if content and e.message.get("tool_calls"):
            self._write(f"   {head_tail(content, 400)}")

    def _model_retry(self, e: ev.ModelRetry) -> None:
        if e.attempt == 0:  # the adapter changed how it asks (e.g. stopped streaming): a note
            self._write(f"   note: {e.reason}")
            return
        self._write(f"   model request failed ({e.reason}); retry {e.attempt} in {e.wait_s:.1f} s")

    def _tool_call_started(self, e: ev.ToolCallStarted) -> None:
        """The header (and a code tool's code) now, so a long cell is never a silent wait."""
        if e.tool.shown_as == "plan":
            return  # shown as the plan once it is set
        arguments = e.arguments if isinstance(e.arguments, dict) else {}
        code = e.shown_code()
        path, content = arguments.get("path"), arguments.get("content")
        if e.tool.writes_workspace and isinstance(path, str) and isinstance(content, str):
            self._written[e.tool_call_id] = (path, content)
        self._announced[e.tool_call_id] = code is not None
        self._announce(e.step, title(e.name, arguments), code)

    def _announce(self, step: int, name: str, code: str | None) -> None:
        """Writes a step's header (the tool, and the file it works on) and, when given, its
        code (the first ``code_lines``)."""
        self._write("\n".join([f"-- step {step}: {name}", *self._code_block(code)]))

    def _code_block(self, code: str | None) -> list[str]:
        if code is None:
            return []
        lines = code.splitlines() or [""]
        shown = lines[: self.code_lines]
        if len(lines) > len(shown):
            shown.append(f"... ({len(lines) - len(shown)} more lines)")
        return [f"   | {line}" for line in shown]

    def _cell_output(self, e: ev.CellOutput) -> None:
        """A running cell's output: the plain view shows its summary at the end instead."""

    def _usage(self, e: ev.UsageUpdated) -> None:
        """Token counts: the plain view says them once, when the run ends."""

    def _tool_call_finished(self, e: ev.ToolCallFinished) -> None:
        traits = e.tool
        if traits.shown_as == "plan" and e.status == "ok":
            return  # the plan itself was just printed
        if traits.shown_as != "plan":
            if traits.runs == "kernel":
                self._cells += 1
            else:
                self._other_calls += 1
        lines: list[str] = []
        code_shown = self._announced.pop(e.tool_call_id, None)
        written = self._written.pop(e.tool_call_id, None)
        if code_shown is None:  # never started (refused, denied): the header comes now
            lines.append(f"-- step {e.step}: {title(e.name, {'path': edited_path(e)})}")
        if not code_shown:
            lines.extend(self._code_block(e.code))
        lines.append(self._result_line(e))
        lines.extend(f"      {line}" for line in self._details(e))
        self._write("\n".join(lines))
        if e.status == "ok":
            diff = file_diff(e, written)
            if diff:
                self._write_diff(bounded(diff, e.step))

    def _write_diff(self, lines: list[str]) -> None:
        """A file step's diff, indented under its result (coloured on a terminal)."""
        self._write("\n".join(DIFF_INDENT + line for line in lines))

    @staticmethod
    def _result_line(e: ev.ToolCallFinished) -> str:
        """How the call ended and how long it took: ``   => ok (6.02 s)``."""
        status = "ok" if e.status == "ok" else e.status.upper()
        return f"   => {status} ({e.duration_s:.2f} s)" + (f" {e.note}" if e.note else "")

    def _details(self, e: ev.ToolCallFinished) -> list[str]:
        """A few lines of what the call produced (code tools, and every failure)."""
        if e.tool.runs == "kernel" or e.status != "ok":
            return _summary(e).splitlines()
        return []

    def _run_finished(self, e: ev.RunFinished) -> None:
        usage = e.usage or {}
        total, estimated = int(usage.get("total_tokens", 0)), bool(usage.get("estimated"))
        # No count at all (a replay of recorded turns asks no model) is not "0 tokens".
        tokens = ev.tokens_label(total, estimated) if total or estimated else "no tokens counted"
        counts = [count(e.steps, "step")]
        counts += [count(self._cells, "cell")] if self._cells else []
        other = "other tool call" if self._cells else "tool call"
        counts += [count(self._other_calls, other)] if self._other_calls else []
        self._cells = self._other_calls = 0
        counts += [f"{e.duration_s:.1f} s", tokens]
        self._write(f"== {e.status}: {e.reason} ({', '.join(counts)})")


def _summary(e: ev.ToolCallFinished) -> str:
    """A few lines of what a tool produced: the error line, the end of the text, images.

    A cell is summed up from its real outputs, not from the text the model was shown: that
    text carries lines meant for the model only (what to do about an image it cannot see,
    the budget left)."""
    images = sum(1 for o in e.outputs if "image/png" in o.get("data", {}))
    errors = [o for o in e.outputs if o.get("output_type") == "error"]
    others = [o for o in e.outputs if o.get("output_type") != "error"]
    parts = []
    if errors:
        parts.append(f"{errors[-1].get('ename')}: {strip_ansi(str(errors[-1].get('evalue')))}")
    elif others:
        lines = render_outputs(others).strip().splitlines()
        parts.extend(lines[:3] + (["...", *lines[-2:]] if len(lines) > 5 else lines[3:]))
        images = 0  # each image has its own line
    elif e.result and e.result != "(no output)":
        lines = _for_the_terminal(strip_ansi(e.result).strip().splitlines())
        parts.extend(lines[:3] + (["...", *lines[-2:]] if len(lines) > 5 else lines[3:]))
    if images and "[image/" not in e.result:
        parts.append(f"[{images} image{'s' if images > 1 else ''}]")
    return "\n".join(clip(p) for p in parts)


def _for_the_terminal(lines: list[str]) -> list[str]:
    """The result's own lines, without what only the model needs: the ``[ran 1.2 s]`` and
    ``[budget left: …]`` lines it ends with (the terminal says both in its own words)."""
    while lines and lines[-1].startswith(("[ran ", "[budget left: ")) and lines[-1].endswith("]"):
        lines = lines[:-1]
    return lines
