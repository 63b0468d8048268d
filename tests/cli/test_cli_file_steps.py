"""What ``codeagent run`` shows of the files it changes, and of its answer, on a terminal and
through a pipe: a real process on a real pseudo-terminal (or pipes), a real sandbox, the
scripted model.

A ``write_file`` or ``edit_file`` step names its file and shows its diff (coloured on a
terminal); the answer is written once, rendered as Markdown on a terminal; a line meant for
the model only is never shown; ``codeagent diff`` is coloured on a terminal.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.pty_terminal import run_on_terminal
from tests.scripted_model import ScriptedModelServer, text, tool_calls

SGR = re.compile(r"\x1b\[[0-9;]*m")
CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
GREEN, RED = "\x1b[32m", "\x1b[31m"
ANSWER = "**Done**: `hello.py` now greets *everyone*."
IMAGE = 'from IPython.display import display\ndisplay({"image/png": "iVBORw0KGgo="}, raw=True)'


def _script() -> list[dict]:
    return [
        tool_calls(("write_file", {"path": "hello.py", "content": "print('hello')\nx = 1\n"})),
        tool_calls(
            (
                "edit_file",
                {"path": "hello.py", "old_string": "print('hello')", "new_string": "print('hi')"},
            )
        ),
        tool_calls(("run_cell", {"code": IMAGE})),
        text(ANSWER),
    ]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    for name in ("TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES"):
        env.pop(name, None)
    return {**env, "OPENAI_API_KEY": "test-key", "TERM": "xterm-256color", **extra}


def _run(url: str, work: Path) -> list[str]:
    return [
        sys.executable, "-m", "codeagent_jupyter.cli", "run", "greet everyone",
        "--model", "m", "--base-url", url, "--workdir", str(work),
        "--out", str(work / ".codeagent" / "sessions" / "s.ipynb"),
    ]  # fmt: skip


def clean(raw: str) -> str:
    """The transcript without escape codes, each redrawn line a line of its own."""
    return CONTROL.sub("", SGR.sub("", raw)).replace("\r\n", "\n").replace("\r", "\n")


def coloured(raw: str, colour: str, line: str) -> bool:
    """Whether ``line`` is on the terminal in ``colour`` (its code, then the line)."""
    return re.search(re.escape(colour) + r" *" + re.escape(line), raw) is not None


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    work = tmp_path_factory.mktemp("file-steps")
    with ScriptedModelServer(_script()) as srv:
        code, raw = run_on_terminal(_run(srv.url, work), _env(), cwd=work)
    assert code == 0, raw
    return work, raw.decode(errors="replace")


def test_file_steps_name_the_file_and_show_a_coloured_diff(session) -> None:
    _, raw = session
    shown = clean(raw)
    assert "-- step 1: write_file hello.py" in shown and "-- step 2: edit_file hello.py" in shown
    assert "+++ hello.py (whole file, 2 lines)" in shown
    assert coloured(raw, GREEN, "+print('hello')") and coloured(raw, GREEN, "+x = 1")
    assert coloured(raw, RED, "-print('hello')") and coloured(raw, GREEN, "+print('hi')")
    assert shown.index("write_file hello.py") < shown.index("+print('hello')")
    assert shown.index("edit_file hello.py") < shown.index("-print('hello')")


def test_the_answer_is_shown_once_as_markdown(session) -> None:
    _, raw = session
    shown = clean(raw)
    assert shown.count("now greets") == 1, shown
    assert "**Done**" not in shown and "`hello.py` now" not in shown  # rendered, not raw
    assert re.search(r"\x1b\[1mDone", raw), "the bold text is bold"
    last = [line for line in shown.splitlines() if line.startswith("== answered")]
    assert last and "(4 steps, 1 cell, 2 other tool calls, " in last[-1], last


def test_lines_for_the_model_only_are_not_shown(session) -> None:
    _, raw = session
    shown = clean(raw)
    assert "[image/png" in shown
    assert "receives no images" not in shown and "[budget left" not in shown


def test_codeagent_diff_is_coloured_on_a_terminal_only(session) -> None:
    work, _ = session
    notebook = str(work / ".codeagent" / "sessions" / "s.ipynb")
    command = [sys.executable, "-m", "codeagent_jupyter.cli", "diff", notebook]
    code, raw = run_on_terminal(command, _env(), cwd=work)
    assert code == 0, raw
    assert coloured(raw.decode(), GREEN, "+print('hi')"), raw
    piped = subprocess.run(command, capture_output=True, text=True, env=_env(), timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert "+print('hi')" in piped.stdout and "\x1b" not in piped.stdout


def test_through_a_pipe_the_same_steps_plain(tmp_path: Path) -> None:
    with ScriptedModelServer(_script()) as srv:
        result = subprocess.run(
            _run(srv.url, tmp_path), capture_output=True, text=True, env=_env(), timeout=240
        )
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    assert "-- step 1: write_file hello.py" in lines
    assert "      +print('hello')" in lines and "      -print('hello')" in lines
    assert "receives no images" not in result.stderr
    assert result.stdout.splitlines()[0] == ANSWER  # the text itself, once, on stdout
