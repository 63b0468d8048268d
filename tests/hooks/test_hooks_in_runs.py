"""Hooks in real runs: the CLI and the server, real sandboxes, the scripted model."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.cli.test_cli import codeagent, one_line_error
from tests.scripted_model import text, tool_calls
from tests.server.helpers import Api, of_type


def _tool_messages(request: dict[str, Any]) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_policy_denial_reaches_the_model_notebook_and_audit(scripted_model, tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    audit = tmp_path / "audit.jsonl"
    scripted_model.set_script(
        [
            tool_calls(("run_command", {"command": "pip install requests"})),
            tool_calls(("run_cell", {"code": "print(6 * 7)"})),
            text("no installs here"),
        ]
    )
    out = tmp_path / "s.ipynb"
    result = codeagent(
        "run", "get requests", "--model", "m", "--base-url", scripted_model.url,
        "--workdir", str(ws), "--out", str(out),
        "--hook", "policy", "--hook", f"audit:path={audit}",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    denied = _tool_messages(scripted_model.requests[1])[0]
    assert denied.startswith("The user denied this tool call")
    assert "Denied by the policy hook: pip install is not allowed" in denied
    assert _tool_messages(scripted_model.requests[2])[1].splitlines()[0] == "42"  # others run
    nb = nbformat.read(out, as_version=4)
    notes = [c.source for c in nb.cells if c.cell_type == "markdown" and "→ denied" in c.source]
    assert len(notes) == 1 and "policy hook" in notes[0]
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(x["event"], x.get("status")) for x in lines] == [
        ("session_start", None),
        ("tool_call", "denied"),
        ("tool_call", "ok"),
        ("session_end", None),
    ]
    assert lines[1]["arguments"] == {"command": "pip install requests"}


def test_a_raising_hook_fails_closed_in_a_run(scripted_model, tmp_path: Path, plugin_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    scripted_model.set_script(
        [tool_calls(("run_cell", {"code": "open('made.txt', 'w').write('x')"})), text("done")]
    )
    env = {"PYTHONPATH": os.pathsep.join([str(plugin_path), os.environ.get("PYTHONPATH", "")])}
    args = ("run", "go", "--model", "m", "--base-url", scripted_model.url, "--workdir", str(ws))
    result = codeagent(*args, "--hook", "raising", env=env)
    assert result.returncode == 0, result.stderr
    denied = _tool_messages(scripted_model.requests[1])[0]
    assert "Denied by the raising hook: the hook failed (RuntimeError" in denied
    assert not (ws / "made.txt").exists()  # the call never ran
    bad = codeagent(*args, "--hook", "nope")
    assert bad.returncode == 2 and "no tool hook named 'nope'" in one_line_error(bad)


@pytest.mark.codeagent(hooks=["policy"])
async def test_server_hook_denies_run_command(api: Api, scripted_model: Any) -> None:
    scripted_model.set_script(
        [tool_calls(("run_command", {"command": "apt-get install -y nmap"})), text("fine")]
    )
    sid = (await api.start("install nmap"))["id"]
    events = await api.run_to_end(sid)
    (finished,) = of_type(events, "tool_call_finished")
    assert finished["status"] == "denied" and "apt is not allowed" in finished["result"]
    assert "Denied by the policy hook" in _tool_messages(scripted_model.requests[1])[0]
