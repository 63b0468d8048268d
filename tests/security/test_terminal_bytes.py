"""No byte the sandbox, a model or a shared notebook chose reaches the user's terminal raw.

The attack is real: ``codeagent`` runs on a pseudo-terminal and every byte it writes there
is captured. A scripted model puts terminal controls everywhere it can: in its text beside
a tool call, in a cell's code, in what the cell prints (stdout, stderr, a value, an
error), in the name and content of files it writes and edits, in its answer; then
``codeagent diff`` and ``--stat`` show those files, and ``codeagent replay --model
recorded`` re-drives an edited copy of the session (its prompt and answer changed, under
a file name that holds controls too). The controls: OSC 52 (writes the clipboard), OSC 0
(the window title), OSC 8 (a link), DCS, a C1 CSI (``\\x9b``), ``ESC[8m`` (hidden text) and
bidi overrides. The only escape codes allowed on the terminal are CSI sequences (the
CLI's own colour and cursor codes), and never the attack's ``ESC[8m``.

``--isolation none``: the sandbox is not under test here, so every CI lane runs this.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import nbformat
import pytest

from tests.cli.pty_terminal import run_on_terminal
from tests.scripted_model import ScriptedModelServer, text, tool_calls

PAYLOAD = (
    "\x1b]52;c;cHduZWQ=\x07"  # OSC 52: set the clipboard
    "\x1b]0;owned-title\x07"  # OSC 0: the window title
    "\x1b]8;;https:evil.example\x1b\\docs\x1b]8;;\x1b\\"  # OSC 8: a link (no '/': a name)
    "\x1bP1$r0m\x1b\\"  # DCS
    "\x9b31mC1"  # C1 CSI, no ESC at all
    "\x1b[8mhidden\x1b[0m"  # conceal
    "\u202etxt.exe\u202c\u2066iso\u2069"  # bidi override, isolate
)
CSI = re.compile(rb"\x1b\[[0-9;?]*[ -/]*[@-~]")
"""A CSI sequence: what the CLI's own colour and cursor codes are."""
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
SHOWN = "^[]52;c;cHduZWQ=^G"
"""The OSC 52 as the terminal must show it: every source below must put this on screen."""

CELL = f"""
import sys
from IPython.display import display
p = {PAYLOAD!r}
open("cell-" + p + ".txt", "w").write("from a cell " + p + "\\n")
print("stdout " + p)
print("stderr " + p, file=sys.stderr)
display({{"text/plain": "value " + p}}, raw=True)
raise ValueError("error " + p)
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    for name in ("TTY_COMPATIBLE", "TTY_INTERACTIVE", "COLUMNS", "LINES"):
        env.pop(name, None)
    return {**env, "OPENAI_API_KEY": "test-key", "TERM": "xterm-256color"}


def _codeagent(*args: str) -> list[str]:
    return [sys.executable, "-m", "codeagent_jupyter.cli", *args]


def raw_controls(raw: bytes) -> list[str]:
    """Every control on ``raw`` that is not one of the CLI's own CSI codes, as repr."""
    found = [repr(m) for m in re.findall(rb"\x1b\[8m", raw)]  # conceal: never ours
    text = CSI.sub(b"", raw).decode("utf-8", errors="replace")
    for char in set(text):
        code = ord(char)
        if (code < 0x20 and char not in "\n\r\t") or 0x7F <= code < 0xA0 or BIDI.match(char):
            found.append(repr(char))
    return sorted(found)


def _assert_clean(raw: bytes, where: str) -> None:
    assert raw_controls(raw) == [], f"{where}: raw controls reached the terminal:\n{raw!r}"
    assert SHOWN in raw.decode("utf-8", errors="replace"), f"{where}: the payload not shown"


@pytest.fixture(scope="module")
def attacked_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int, bytes]:
    """One ``codeagent run`` on a terminal through every kind of step the model can take."""
    tmp_path = tmp_path_factory.mktemp("terminal-attack")
    work = tmp_path / "work"
    work.mkdir()
    name = f"notes{PAYLOAD}.md"
    script = [
        tool_calls(
            ("write_file", {"path": name, "content": f"first {PAYLOAD}\nsecond line\n"}),
            content=f"Writing a file {PAYLOAD}",
        ),
        tool_calls(("run_cell", {"code": f"# the model's code {PAYLOAD}{CELL}"})),
        tool_calls(
            ("edit_file", {"path": name, "old_string": "second line", "new_string": PAYLOAD})
        ),
        text(f"All done {PAYLOAD} **really** &#x202e;&#8238;&rlm;&#27;[8m [a](https:evil)"),
    ]
    out = work / ".codeagent" / "sessions" / "s.ipynb"
    with ScriptedModelServer(script) as srv:
        command = _codeagent(
            "run", f"attack {PAYLOAD}", "--model", "m", "--base-url", srv.url,
            "--workdir", str(work), "--out", str(out), "--isolation", "none",
        )  # fmt: skip
        code, raw = run_on_terminal(command, _env(tmp_path), cwd=work)
    return work, out, code, raw


def test_a_run_shows_every_control_it_was_sent(attacked_run) -> None:
    _, out, code, raw = attacked_run
    assert code == 0, raw
    assert out.exists()
    _assert_clean(raw, "codeagent run")
    shown = raw.decode("utf-8", errors="replace")
    assert "write_file notes^[]52;c;" in shown  # the file step's header names the file
    assert "edit_file notes^[]52;c;" in shown


@pytest.mark.parametrize("stat", [False, True], ids=["diff", "stat"])
def test_codeagent_diff_shows_the_files_controls(attacked_run, tmp_path: Path, stat) -> None:
    work, out, _, _ = attacked_run
    command = _codeagent("diff", str(out), *(["--stat"] if stat else []))
    code, raw = run_on_terminal(command, _env(tmp_path), cwd=work)
    assert code == 0, raw
    assert b"notes" in raw and b"cell-" in raw
    _assert_clean(raw, "codeagent diff")


def test_replaying_an_edited_shared_notebook(attacked_run, tmp_path: Path) -> None:
    """A session someone else edited: a new prompt and answer, and a file name with controls."""
    _, out, _, _ = attacked_run
    notebook = nbformat.read(out, as_version=4)
    meta = notebook.metadata["codeagent"]
    edited = json.dumps(meta).replace("All done", "Edited " + json.dumps(PAYLOAD)[1:-1])
    notebook.metadata["codeagent"] = json.loads(edited)
    for cell in notebook.cells:  # the prompt as the notebook shows it, too
        cell.source = cell.source.replace("attack", f"shared {PAYLOAD}")
    shared = tmp_path / f"shared{PAYLOAD}.ipynb"
    nbformat.write(notebook, shared)
    work = tmp_path / "replay"
    work.mkdir()
    command = _codeagent(
        "replay", str(shared), "--model", "recorded", "--workdir", str(work), "--isolation", "none"
    )
    _, raw = run_on_terminal(command, _env(tmp_path), cwd=work)
    assert b"Edited" in raw, raw
    _assert_clean(raw, "codeagent replay --model recorded")


def test_an_error_naming_a_hostile_path_is_shown(tmp_path: Path) -> None:
    missing = tmp_path / f"gone{PAYLOAD}.ipynb"
    code, raw = run_on_terminal(_codeagent("diff", str(missing)), _env(tmp_path), cwd=tmp_path)
    assert code == 2, raw
    assert b"not found" in raw
    assert raw_controls(raw) == [], raw


def test_the_sanitizer_shows_every_control_and_keeps_the_rest() -> None:
    """The one function every writer uses: each C0/C1/bidi control has a visible spelling,
    text and newlines stay, and sanitizing twice changes nothing."""
    from codeagent_jupyter.util.visible import visible

    controls = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA0))] + ["\u202e", "\u2066"]
    for char in controls:
        shown = visible(char)
        if char in "\n\t":
            assert shown == char
        else:
            assert shown != char and shown.isprintable(), repr(char)
    assert visible(PAYLOAD).isprintable()
    assert visible("a\x1bb\x9bc\u202ed") == "a^[b\\x9bc\\u202ed"
    assert visible("bar\r", keep_cr=True) == "bar\r" and visible("bar\r") == "bar^M"
    assert visible(visible(PAYLOAD)) == visible(PAYLOAD)
    assert visible("naïve café — 数据\n\tok") == "naïve café — 数据\n\tok"
