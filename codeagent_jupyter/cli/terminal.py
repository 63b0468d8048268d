"""The CLI's view of a run on a terminal: the plain trace, in colour, with a live status line
(step, what runs, elapsed time, tokens) and each cell's output shown as it arrives.

Everything is written through ``rich``, which keeps the status line at the bottom while the
trace scrolls above it. Only a terminal gets this view (``make_printer``): pipes, files and
``TERM=dumb`` get the plain ``ProgressPrinter`` unchanged, and ``NO_COLOR`` keeps the live
view but writes no colour or style codes at all.

Every line is made ``visible`` before ``rich`` sees it (``rich`` passes ESC through, and
would read ``[bold]`` in a ``str`` as markup: only ``Text`` objects are printed), and the
styles are added to the result: the only control codes on the terminal are our own.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.spinner import Spinner
from rich.syntax import Syntax
from rich.text import Text

from .. import events as ev
from ..util.textbounds import strip_ansi
from ..util.visible import visible
from .file_steps import DIFF_INDENT, diff_line
from .printer import ProgressPrinter

STREAM_LINES = 200
"""Lines of one call's output shown as it runs; the session notebook keeps all of it."""
MODEL_TEXT_LINES = 8
"""Lines of the model's text shown while it streams (the last ones)."""

OUTPUT_INDENT = " " * 6
"""A cell's output sits under its code, as the plain trace's summary does."""

_PREFIX_STYLES = (
    ("== answered", "bold green"),
    ("== ", "bold"),
    ("-- ", "bold cyan"),
    ("   => ok", "green"),
    ("   => ", "bold red"),
    ("   note:", "yellow"),
    ("   model request failed", "yellow"),
)
"""How a plain trace line looks on a terminal, by how it starts (first match wins)."""


def wants_live_view(stream: TextIO) -> bool:
    """A terminal that can redraw a line: not a pipe or a file, not ``TERM=dumb``."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        return False
    return tty and os.environ.get("TERM", "") not in ("dumb", "unknown")


def make_printer(
    stream: TextIO | None = None, *, answer_on: TextIO | None = None
) -> ProgressPrinter:
    """The progress sink for ``stream`` (stderr by default): live on a terminal, else plain.

    ``answer_on`` is where the run's answer will be printed (stdout): when that is a
    terminal too, the live view leaves the answer to it, so the user reads it once."""
    stream = stream or sys.stderr
    if not wants_live_view(stream):
        return ProgressPrinter(stream)
    elsewhere = answer_on is not None and wants_live_view(answer_on)
    return TerminalPrinter(stream, answer_elsewhere=elsewhere)


class _Status:
    """The bottom line: refreshed by ``Live`` a few times a second, so the clocks move."""

    def __init__(self) -> None:
        self.spinner = Spinner("dots", style="cyan")
        self.started = time.monotonic()
        self.step = 0
        self.activity = "starting"
        self.since = self.started
        self.tokens = ""
        self.partial = ""
        """The line being written right now (a progress bar), shown above."""
        self.model_text: list[str] = []
        """The last lines of the model's text as it streams, shown above (already visible)."""
        self.indent = ""

    def doing(self, activity: str, step: int | None = None) -> None:
        self.activity, self.since = activity, time.monotonic()
        if step is not None:
            self.step = step

    def line(self) -> Text:
        now = time.monotonic()
        parts = [
            f"step {self.step}" if self.step else "",
            f"{self.activity} {now - self.since:.1f} s",
        ]
        parts += [f"{_clock(now - self.started)} elapsed", self.tokens]
        return Text(visible(" · ".join(p for p in parts if p)), style="dim")

    def __rich__(self) -> Any:
        self.spinner.text = self.line()
        above = [Text(line) for line in self.model_text]
        if self.partial:
            above.append(Text(self.indent + self.partial))
        return Group(*above, self.spinner) if above else self.spinner


class TerminalPrinter(ProgressPrinter):
    """The plain trace, styled, plus the live status line and streamed cell output."""

    def __init__(
        self, stream: TextIO | None = None, *, code_lines: int = 12, answer_elsewhere: bool = False
    ) -> None:
        super().__init__(stream, code_lines=code_lines)
        self.answer_elsewhere = answer_elsewhere
        """The answer is printed on another terminal stream (stdout): not in this trace."""
        self._model_text = ""  # this turn's streamed text so far
        plain = "NO_COLOR" in os.environ and os.environ["NO_COLOR"] != ""
        self.console = Console(
            file=self.stream,
            force_terminal=True,
            color_system=None if plain else "auto",
            highlight=False,
        )
        self.status = _Status()
        self._live = Live(self.status, console=self.console, transient=True, refresh_per_second=8)
        self._shown: dict[str, int] = {}
        """Lines of output shown so far for each call that streamed some."""
        self._partial_of = ""  # the call whose line is unfinished
        self._unfinished = ""  # that line as it came, carriage returns included

    def emit(self, event: ev.Event) -> None:
        super().emit(event)  # every event is the plain trace's first; the status line after
        match event:
            case ev.RunStarted():
                self.status.doing("waiting for the model")
                if not self._live.is_started:
                    self._live.start()
            case ev.AssistantMessage():
                self.status.doing("waiting for the model", event.step)
            case ev.ToolCallFinished():
                self.status.doing("waiting for the model")
            case ev.RunFinished():
                self.close()

    def close(self) -> None:
        """Stops the status line and gives the terminal its cursor back; model text cut
        short by a stop is kept on the screen."""
        if self._model_text.strip():
            self.status.model_text = []
            self._write(self._model_text.strip())
            self._model_text = ""
        if self._live.is_started:
            self._live.stop()

    # -- writing -------------------------------------------------------------------------
    def _write(self, text: str) -> None:
        self._end_partial()
        for line in text.split("\n"):
            self.console.print(_styled(visible(line)), soft_wrap=True)

    def _end_partial(self) -> None:
        """An unfinished line is written out before anything else is."""
        if self.status.partial:
            self.console.print(Text(self.status.indent + self.status.partial), soft_wrap=True)
        self.status.partial = self._unfinished = ""

    def _stream_text(self, owner: str, text: str, style: str = "") -> None:
        """A call's output: complete lines scroll up; the last, unfinished one stays in the
        live area, shown as a terminal would show it (after its last carriage return: a
        progress bar)."""
        if self._partial_of != owner:
            self._end_partial()
            self._partial_of = owner
        indent = self.status.indent = OUTPUT_INDENT
        lines = (self._unfinished + text).split("\n")
        unfinished = lines.pop()
        for line in lines:
            if not self._room(owner):
                self.status.partial = self._unfinished = ""
                return
            self.console.print(Text(indent + _last_frame(line), style=style), soft_wrap=True)
        if self._room(owner, count=False):
            self._unfinished, self.status.partial = unfinished, _last_frame(unfinished)

    def _room(self, owner: str, *, count: bool = True) -> bool:
        """Whether ``owner``'s output may show one more line."""
        shown = self._shown.get(owner, 0)
        if not count:
            return shown < STREAM_LINES
        self._shown[owner] = shown + 1
        if shown == STREAM_LINES:
            note = "... (more output: the session notebook keeps all of it)"
            self.console.print(Text(OUTPUT_INDENT + note, style="dim"), soft_wrap=True)
        return shown < STREAM_LINES

    # -- events --------------------------------------------------------------------------
    def _text_delta(self, e: ev.TextDelta) -> None:
        """The model's text stays in the live area while it streams: only once the turn is
        over is it known whether it is the answer (which may be printed elsewhere)."""
        self._model_text += e.text
        lines = visible(self._model_text[-MODEL_TEXT_LINES * 400 :]).split("\n")
        self.status.model_text = lines[-MODEL_TEXT_LINES:]

    def _assistant_message(self, e: ev.AssistantMessage) -> None:
        streamed, self._model_text = self._model_text.strip(), ""
        self.status.model_text = []
        if not streamed:
            super()._assistant_message(e)
            return
        if e.message.get("tool_calls") or not self.answer_elsewhere:
            self._write(streamed)

    def _announce(self, step: int, name: str, code: str | None) -> None:
        self._end_partial()
        # The call runs from here on: the status line drawn under the lines below says so.
        self.status.doing(f"running {name}", step)
        self.console.print(_styled(visible(f"-- step {step}: {name}")), soft_wrap=True)
        block = self._code_block(code)
        if block:
            shown = visible("\n".join(line[len("   | ") :] for line in block))
            highlighted = Syntax(shown, "python", theme="ansi_dark").highlight(shown)
            highlighted.rstrip()
            for line in highlighted.split("\n"):
                self.console.print(Text.assemble(("   | ", "dim"), line), soft_wrap=True)

    def _cell_output(self, e: ev.CellOutput) -> None:
        output = e.output
        kind = output.get("output_type")
        if kind == "stream":
            style = "red" if output.get("name") == "stderr" else ""
            self._stream_text(e.tool_call_id, str(output.get("text", "")), style)
            return
        self._end_partial()
        if kind == "error":
            line = f"{output.get('ename')}: {strip_ansi(str(output.get('evalue')))}"
            self._stream_text(e.tool_call_id, line + "\n", "bold red")
        elif kind in ("execute_result", "display_data"):
            self._stream_text(e.tool_call_id, _display_text(output.get("data", {})) + "\n")

    def _usage(self, e: ev.UsageUpdated) -> None:
        total = e.total_prompt_tokens + e.total_completion_tokens
        self.status.tokens = ev.tokens_label(total, e.total_estimated)

    def _details(self, e: ev.ToolCallFinished) -> list[str]:
        if self._shown.pop(e.tool_call_id, 0) and e.tool.runs == "kernel":
            return []  # its output was shown as it came
        return super()._details(e)

    def _tool_call_finished(self, e: ev.ToolCallFinished) -> None:
        if self._partial_of == e.tool_call_id:
            self._end_partial()
        super()._tool_call_finished(e)

    def _write_diff(self, lines: list[str]) -> None:
        self._end_partial()
        for line in lines:
            self.console.print(diff_line(line, DIFF_INDENT), soft_wrap=True)


def _styled(line: str) -> Text:
    for prefix, style in _PREFIX_STYLES:
        if line.startswith(prefix):
            return Text(line, style=style)
    return Text(line)


def _last_frame(line: str) -> str:
    """What a terminal shows of a line redrawn with carriage returns (a progress bar)."""
    return visible(strip_ansi(line.rstrip("\r").rsplit("\r", 1)[-1]))


def _display_text(data: dict[str, Any]) -> str:
    """A rich output as a terminal can show it: its text, or what kind of output it is."""
    images = [mime for mime in data if mime.startswith("image/")]
    if images:
        return f"[{images[0]}]"
    plain = data.get("text/plain")
    if isinstance(plain, list):
        plain = "".join(plain)
    if isinstance(plain, str):
        return strip_ansi(plain)
    return "[" + ", ".join(data) + "]" if data else ""


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}:{secs:02d}"
