"""The ``policy`` hook against the forms a cell reaches the shell in, in a real run.

The real CLI, a real sandbox and the real hook; the scripted model asks, in one turn, for
an install or a network command in each spelling IPython and Python offer (``out = !…``,
``%sx``, ``get_ipython().system``, ``os.system``, ``subprocess.run([sys.executable, "-m",
"pip", …])``, ``%time !…``, aliases, automagic …). Every one must come back to the model
as denied by the hook, and none may have run: each denied cell first writes a marker file,
and no marker may exist afterwards. Harmless shell use in the same turn still runs, so the
hook is not simply denying everything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.cli.test_cli import codeagent
from tests.scripted_model import text, tool_calls

MARK = "open('ran-{n}', 'w').close()\n"
DENIED_CELLS = [
    ("import subprocess, sys\n"
     'subprocess.run([sys.executable, "-m", "pip", "install", "requests"])', "pip install"),
    ("out = !curl -s example.com/data.csv", "a network tool"),
    ("x = 1\n%sx wget example.com/data.csv", "a network tool"),
    ('get_ipython().system("curl example.com")', "a network tool"),
    ('import os\nos.system("wget -q example.com/data.csv")', "a network tool"),
    ("%pip install requests", "pip install"),
    ("%conda install numpy", "conda install"),
    ('import subprocess\nsubprocess.check_call(["python3", "-m", "pip", "install", "x"])',
     "pip install"),
    ('from subprocess import check_output as co\nco("curl example.com", shell=True)',
     "a network tool"),
    ("%time !curl example.com", "a network tool"),
    ('import subprocess as sp\nsp.Popen(["ssh", "git@example.com"]).wait()', "a network tool"),
    ("if True:\n    !wget example.com", "a network tool"),
    ('host = "example.com"\nimport os\nos.popen(f"nc {host} 80").read()', "a network tool"),
    ("%%capture\n!git clone example.com/repo", "git over the network"),
]  # fmt: skip
"""(cell, what the denial names); each cell is sent with a marker line in front."""
DENIED_WHOLE = [
    ("run_cell", {"code": "pip install requests"}, "pip install"),  # IPython's automagic
    ("run_command", {"command": "python3.12 -m pip download requests"}, "pip install"),
    ("run_command", {"command": "sh -c 'wget example.com'"}, "a network tool"),
]
ALLOWED = [
    ("print(6 * 7)", "42"),
    ('import subprocess\nprint(subprocess.run(["echo", "sub ok"], capture_output=True, '
     "text=True).stdout)", "sub ok"),
    ("lines = !echo bang ok\nprint(lines[0])", "bang ok"),
    ('import os\nos.system("echo system ok")', "system ok"),
]  # fmt: skip


def _tool_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_policy_denies_every_shell_form_and_runs_none(scripted_model, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    calls: list[tuple[str, dict[str, Any]]] = [
        ("run_cell", {"code": MARK.format(n=n) + cell}) for n, (cell, _) in enumerate(DENIED_CELLS)
    ]
    calls += [(tool, args) for tool, args, _ in DENIED_WHOLE]
    calls += [("run_cell", {"code": code}) for code, _ in ALLOWED]
    scripted_model.set_script([tool_calls(*calls), text("nothing fetched")])
    result = codeagent(
        "run", "fetch the data", "--model", "m", "--base-url", scripted_model.url,
        "--workdir", str(ws), "--out", str(tmp_path / "s.ipynb"), "--hook", "policy",
        "--isolation", "none",  # the hook is under test, not the sandbox: CI's no-bwrap lane too
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    answers = _tool_messages(scripted_model.requests[1])
    assert len(answers) == len(calls)
    expected = [what for _, what in DENIED_CELLS] + [what for *_, what in DENIED_WHOLE]
    wrong = [
        (call, answer[:200])
        for call, answer, what in zip(calls, answers, expected, strict=False)
        if not answer.startswith("The user denied this tool call")
        or f"Denied by the policy hook: {what} is not allowed" not in answer
    ]
    assert wrong == []
    assert sorted(p.name for p in ws.iterdir() if p.name.startswith("ran-")) == []
    for (code, shown), answer in zip(ALLOWED, answers[len(expected) :], strict=True):
        assert shown in answer, (code, answer)
