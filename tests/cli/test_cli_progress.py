"""What ``codeagent run`` shows while it works: on a real pseudo-terminal, a cell's output as
it arrives, under a live status line; through a pipe, the plain trace scripts read.

A real ``codeagent run`` process, a real sandbox, the scripted model. The cell prints, then
waits for a file the test creates: what the terminal shows before that file exists is what
a user sees while a cell runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.pty_terminal import Terminal
from tests.scripted_model import ScriptedModelServer, text, tool_calls

WAITING_CELL = (
    "import os, time\n"
    "print('first half', flush=True)\n"
    "open('started', 'w').close()\n"
    "deadline = time.monotonic() + 240\n"
    "while not os.path.exists('go') and time.monotonic() < deadline:\n"
    "    time.sleep(0.05)\n"
    "print('second half')"
)
SGR = re.compile(r"\x1b\[[0-9;]*m")
"""A colour or style escape code."""
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def clean(raw: str) -> str:
    """What a terminal transcript says, without its escape codes; a line redrawn after a
    carriage return (the status line) counts as a line of its own."""
    return CONTROL.sub("", SGR.sub("", raw)).replace("\r\n", "\n").replace("\r", "\n")


def output_line(words: str) -> re.Pattern[str]:
    """A line of cell output as the trace shows it (indented, not a line of code)."""
    return re.compile(rf"^ +{re.escape(words)} *$", re.M)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    for name in ("TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES"):
        env.pop(name, None)
    return {**env, "OPENAI_API_KEY": "test-key", "TERM": "xterm-256color", **extra}


def _command(url: str, work: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "codeagent_jupyter.cli", "run", "wait for the file",
        "--model", "m", "--base-url", url, "--workdir", str(work),
        "--out", str(work / "s.ipynb"), "--cell-timeout", "300", *extra,
    ]  # fmt: skip


@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
def test_terminal_shows_a_running_cells_output_before_it_ends(
    tmp_path: Path, no_color: bool
) -> None:
    script = [tool_calls(("run_cell", {"code": WAITING_CELL})), text("Both halves printed.")]
    env = _env(**({"NO_COLOR": "1"} if no_color else {}))
    with ScriptedModelServer(script) as srv:
        term = Terminal(_command(srv.url, tmp_path), env)
        try:
            started = term.wait_for((tmp_path / "started").exists, timeout=240)
            assert started, f"the cell never ran:\n{term.text}"
            # The cell is running now, and has printed its first half: the terminal shows it.
            first = output_line("first half")
            running = re.compile(r"step 1 · running run_cell \d+\.\d s · 0:\d\d elapsed")
            shown = term.wait_for(  # the output, and the status line drawn after it
                lambda: bool(first.search(clean(term.text)) and running.search(clean(term.text))),
                timeout=60,
            )
            during = term.text
        finally:
            (tmp_path / "go").write_text("")
            code = term.finish()
    transcript = term.text
    assert shown, f"nothing of the running cell was shown before it ended:\n{transcript}"
    assert code == 0, transcript
    plain = clean(during)
    assert "-- step 1: run_cell" in plain and "print('first half', flush=True)" in plain
    assert plain.index("-- step 1: run_cell") < first.search(plain).start()
    assert not output_line("second half").search(plain) and "=> ok" not in plain  # not ended
    assert re.search(r"step 1 · running run_cell \d+\.\d s · 0:\d\d elapsed", plain), plain
    assert "tokens" in plain  # the first reply's usage is on the status line
    after = clean(transcript)
    assert re.search(r"=> ok \(\d+\.\d\d s\)", after) and output_line("second half").search(after)
    assert "Both halves printed." in after and "Session: " in after
    if no_color:
        assert not SGR.search(transcript), "NO_COLOR output holds colour or style codes"
    else:
        assert SGR.search(transcript), "a terminal gets colour unless NO_COLOR is set"


def test_piped_progress_stays_plain(scripted_model, tmp_path: Path) -> None:
    """Through a pipe: no escape codes, no status line, the same lines as always (header and
    code first, then the result with its time and a summary of the output)."""
    code = "for i in range(3):\n    print('line', i)"
    scripted_model.set_script([tool_calls(("run_cell", {"code": code})), text("Three lines.")])
    result = subprocess.run(
        _command(scripted_model.url, tmp_path),
        capture_output=True,
        text=True,
        env=_env(),
        timeout=240,
    )
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stderr and "\r" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines[0].startswith("sandbox: ")
    expected = [
        r"== Request: wait for the file",
        rf"   model m at {re.escape(scripted_model.url)}",
        r"-- step 1: run_cell",
        r"   \| for i in range\(3\):",
        r"   \|     print\('line', i\)",
        r"   => ok \(\d+\.\d\d s\)",
        r"      line 0",
        r"      line 1",
        r"      line 2",
        r"Three lines\.",
        r"",
        r"== answered: the model gave its answer \(2 steps, 1 cell, \d+\.\d s, [\d,]+ tokens\)",
    ]
    assert len(lines[1:]) == len(expected), result.stderr
    for line, pattern in zip(lines[1:], expected, strict=True):
        assert re.fullmatch(pattern, line), (line, pattern)
    assert result.stdout.splitlines()[0] == "Three lines."
