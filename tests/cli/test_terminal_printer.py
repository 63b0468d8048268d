"""The terminal view's handling of what cells print: progress bars, long outputs, the choice
of view. Real events into a real ``rich`` console writing to a buffer or a pseudo-terminal."""

from __future__ import annotations

import io
import os
import pty
import re

import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.cli.printer import ProgressPrinter
from codeagent_jupyter.cli.terminal import STREAM_LINES, TerminalPrinter, make_printer

SGR = re.compile(r"\x1b\[[0-9;]*m")
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _lines(buffer: io.StringIO) -> list[str]:
    text = CONTROL.sub("", SGR.sub("", buffer.getvalue()))
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _run(printer: ProgressPrinter, outputs: list[dict], code: str = "work()") -> None:
    printer.emit(ev.RunStarted(prompt="p"))
    printer.emit(
        ev.ToolCallStarted(step=1, tool_call_id="c1", name="run_cell", arguments={"code": code})
    )
    for output in outputs:
        printer.emit(ev.CellOutput(tool_call_id="c1", output=output))
    printer.emit(
        ev.ToolCallFinished(
            step=1, tool_call_id="c1", name="run_cell", code=code, result="x", duration_s=1.5
        )
    )
    printer.emit(ev.RunFinished(status="answered", reason="done", steps=1))


def _stream(text: str, name: str = "stdout") -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def test_a_progress_bar_shows_as_its_last_frame() -> None:
    """``\\r`` redraws a line: the terminal keeps the last frame, never the frames glued."""
    buffer = io.StringIO()
    _run(
        TerminalPrinter(buffer),
        [_stream("loading 10%\r"), _stream("loading 60%\r"), _stream("loading 100%\n")],
    )
    lines = _lines(buffer)
    assert "      loading 100%" in lines
    assert not any("%loading" in line for line in lines), lines
    assert "   => ok (1.50 s)" in lines


def test_a_long_output_is_cut_with_a_note_and_not_repeated_at_the_end() -> None:
    buffer = io.StringIO()
    rows = "".join(f"row {i}\n" for i in range(STREAM_LINES + 50))
    _run(TerminalPrinter(buffer), [_stream(rows)])
    lines = _lines(buffer)
    assert f"      row {STREAM_LINES - 1}" in lines and f"      row {STREAM_LINES}" not in lines
    assert "      ... (more output: the session notebook keeps all of it)" in lines
    after = lines[lines.index("   => ok (1.50 s)") :]
    assert not any(line.strip().startswith("row") for line in after)  # no summary again


def test_errors_and_rich_outputs_are_shown_as_they_come() -> None:
    buffer = io.StringIO()
    outputs = [
        {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<Figure>"}},
        {"output_type": "execute_result", "data": {"text/plain": "42"}, "execution_count": 1},
        {"output_type": "error", "ename": "KeyError", "evalue": "'revenue'", "traceback": []},
    ]
    _run(TerminalPrinter(buffer), outputs)
    lines = _lines(buffer)
    shown = [line for line in lines if line.startswith("      ")]
    assert shown == ["      [image/png]", "      42", "      KeyError: 'revenue'"]


def test_no_color_writes_no_style_codes(monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = [
        _stream("plain\n"),
        {"output_type": "error", "ename": "E", "evalue": "v", "traceback": []},
    ]
    coloured = io.StringIO()
    _run(TerminalPrinter(coloured), outputs, code="import os")
    assert SGR.search(coloured.getvalue())
    monkeypatch.setenv("NO_COLOR", "1")
    plain = io.StringIO()
    _run(TerminalPrinter(plain), outputs, code="import os")
    assert not SGR.search(plain.getvalue())
    assert "      plain" in _lines(plain)


def test_only_a_terminal_that_can_redraw_gets_the_live_view(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert type(make_printer(io.StringIO())) is ProgressPrinter  # a pipe or a file
    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "w", closefd=False) as tty:
            monkeypatch.setenv("TERM", "xterm-256color")
            assert isinstance(make_printer(tty), TerminalPrinter)
            monkeypatch.setenv("TERM", "dumb")
            assert type(make_printer(tty)) is ProgressPrinter
    finally:
        os.close(master)
        os.close(slave)
