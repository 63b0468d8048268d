"""A terminal view of a run: the plan, each cell and how it went, retries and the stop.

It is just another event sink, so the CLI shows exactly what the notebook records.
"""

from __future__ import annotations

import io
import sys
from typing import Any, TextIO

from . import events as ev
from .textbounds import head_tail, strip_ansi
from .timeline import CODE_TOOLS

_MARK = {"done": "[x]", "in_progress": "[~]", "pending": "[ ]"}


class ProgressPrinter:
    """Writes a compact, human-readable trace of the events to a stream (stderr by default)."""

    def __init__(self, stream: TextIO | None = None, *, code_lines: int = 12) -> None:
        self.stream = stream or sys.stderr
        self.code_lines = code_lines
        self._streaming = False

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
            case ev.ApprovalRequested():
                self._write(f"   waiting for approval of {event.name}")
            case ev.ToolCallFinished():
                self._tool_call_finished(event)
            case ev.RunFinished():
                self._run_finished(event)
            case ev.SessionRestored():
                self._write(f"== Session {event.summary}")
                for problem in event.problems:
                    self._write(f"   not rebuilt: {problem}")
            case ev.ChildEvent():
                self._child_event(event)

    def _write(self, text: str) -> None:
        if self._streaming:
            self.stream.write("\n")
            self._streaming = False
        self.stream.write(text + "\n")
        self.stream.flush()

    def _child_event(self, e: ev.ChildEvent) -> None:
        """A helper's event, printed as its own trace would be, each line marked with it."""
        inner = e.inner()
        if inner is None or isinstance(inner, ev.TextDelta):
            return  # helpers run at once: their streamed text would interleave
        buffer = io.StringIO()
        ProgressPrinter(buffer, code_lines=self.code_lines).emit(inner)
        lines = buffer.getvalue().rstrip("\n").splitlines()
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
        self.stream.write(e.text)
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

    def _tool_call_finished(self, e: ev.ToolCallFinished) -> None:
        if e.name == "update_plan" and e.status == "ok":
            return  # the plan itself was just printed
        header = f"-- step {e.step}: {e.name}"
        body: list[str] = []
        if e.code is not None:
            lines = e.code.splitlines() or [""]
            shown = lines[: self.code_lines]
            if len(lines) > len(shown):
                shown.append(f"... ({len(lines) - len(shown)} more lines)")
            body.extend(f"   | {line}" for line in shown)
        status = "ok" if e.status == "ok" else e.status.upper()
        body.append(f"   => {status} ({e.duration_s:.2f} s)" + (f" {e.note}" if e.note else ""))
        if e.name in CODE_TOOLS or e.status != "ok":
            detail = _summary(e)
            if detail:
                body.extend(f"      {line}" for line in detail.splitlines())
        self._write("\n".join([header, *body]))

    def _run_finished(self, e: ev.RunFinished) -> None:
        usage = e.usage or {}
        tokens = ev.tokens_label(int(usage.get("total_tokens", 0)), bool(usage.get("estimated")))
        self._write(f"== {e.status}: {e.reason} ({e.steps} steps, {e.duration_s:.1f} s, {tokens})")


def _summary(e: ev.ToolCallFinished) -> str:
    """A few lines of what a tool produced: the error line, the end of the text, images."""
    images = sum(1 for o in e.outputs if "image/png" in o.get("data", {}))
    errors = [o for o in e.outputs if o.get("output_type") == "error"]
    parts = []
    if errors:
        parts.append(f"{errors[-1].get('ename')}: {strip_ansi(str(errors[-1].get('evalue')))}")
    elif e.result and e.result != "(no output)":
        lines = strip_ansi(e.result).strip().splitlines()
        parts.extend(lines[:3] + (["...", *lines[-2:]] if len(lines) > 5 else lines[3:]))
    if images and "[image/" not in e.result:
        parts.append(f"[{images} image{'s' if images > 1 else ''}]")
    return "\n".join(_clip(p) for p in parts)


def _clip(line: Any, width: int = 160) -> str:
    text = str(line)
    return text if len(text) <= width else text[: width - 3] + "..."
