"""The ``delegate`` tool: three helpers in three sandboxes at once; files back; cancel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.cli.test_cli import codeagent
from tests.scripted_model import text, tool_calls
from tests.server.helpers import processes_in

TASKS = ["helper task A", "helper task B", "helper task C"]


def _responder(sleep: float, tasks: list[str] = TASKS) -> Any:
    """Stateless: the parent delegates, each helper writes its file, then everyone answers."""

    def respond(messages: list[dict[str, Any]]) -> dict[str, Any]:
        first = next(m["content"] for m in messages if m["role"] == "user")
        answered = sum(m["role"] == "assistant" for m in messages)
        helper = next((t for t in tasks if first.endswith(t)), None)
        if helper is None:
            if answered == 0:
                return tool_calls(("delegate", {"tasks": tasks}))
            return text("all helpers done")
        letter = helper[-1]
        if answered == 0:
            code = f"import time\ntime.sleep({sleep})\nopen('{letter}.txt', 'w').write('{letter}')"
            return tool_calls(("run_cell", {"code": code}))
        return text(f"wrote {letter}.txt")

    return respond


def test_three_helpers_run_at_once_and_bring_their_files_back(scripted_model, tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "shared.txt").write_text("seen by every helper")
    scripted_model.set_script(_responder(sleep=2.0))
    args = ("run", "split the work", "--model", "m", "--base-url", scripted_model.url)
    result = codeagent(*args, "--workdir", str(ws), "--delegate", "3", timeout=240)
    assert result.returncode == 0, result.stderr
    parent_last = [
        r for r in scripted_model.requests if r["messages"][1]["content"].endswith("split the work")
    ][-1]
    result = parent_last["messages"][-1]["content"]  # the JSON, then the budget line
    helpers = json.JSONDecoder().raw_decode(result)[0]["helpers"]
    assert [h["status"] for h in helpers] == ["answered"] * 3
    assert [h["answer"] for h in helpers] == ["wrote A.txt", "wrote B.txt", "wrote C.txt"]
    latest_start = max(h["started_s"] for h in helpers)
    earliest_end = min(h["finished_s"] for h in helpers)
    assert latest_start < earliest_end  # the three time windows overlap: they ran at once
    for i, letter in enumerate("ABC", start=1):
        assert helpers[i - 1]["files"] == [f"delegates/1-{i}/{letter}.txt"]
        assert (ws / "delegates" / f"1-{i}" / f"{letter}.txt").read_text() == letter
    assert not (ws / "A.txt").exists()  # helpers work on copies, not the parent's files
    helpers_dir = ws / ".codeagent" / "sessions" / "helpers"  # next to the session notebook
    assert len(list(helpers_dir.glob("*/helper-1-*.ipynb"))) == 3
    assert "delegate" in json.dumps(scripted_model.requests[0]["tools"])


def test_a_later_session_does_not_overwrite_earlier_helpers(scripted_model, tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    scripted_model.set_script(_responder(sleep=0, tasks=["helper task A"]))
    args = ("run", "split the work", "--model", "m", "--base-url", scripted_model.url)
    for _ in range(2):  # e.g. a fork: its workspace holds the parent's delegates/ already
        result = codeagent(*args, "--workdir", str(ws), "--delegate", "1", timeout=240)
        assert result.returncode == 0, result.stderr
    assert sorted(p.parent.name for p in (ws / "delegates").glob("*/A.txt")) == ["1-1", "2-1"]
    notebooks = sorted((ws / ".codeagent" / "sessions" / "helpers").glob("*/*.ipynb"))
    assert len(notebooks) == 2 and notebooks[0].parent != notebooks[1].parent  # per session


def test_too_many_tasks_is_a_refusal_the_model_sees(scripted_model, tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    scripted_model.set_script([tool_calls(("delegate", {"tasks": TASKS})), text("ok")])
    args = ("run", "go", "--model", "m", "--base-url", scripted_model.url, "--workdir", str(ws))
    assert codeagent(*args, "--delegate", "2").returncode == 0
    tool = scripted_model.requests[1]["messages"][-1]["content"]
    assert tool.splitlines()[0] == "Error: delegate takes at most 2 tasks per call"


def test_cancel_stops_every_helper(scripted_model, tmp_path: Path):
    ws = tmp_path / "ws"
    ws.mkdir()
    children = tmp_path / "children"
    children.mkdir()
    scripted_model.set_script(_responder(sleep=120))
    env = {**os.environ, "OPENAI_API_KEY": "k", "TMPDIR": str(children)}
    argv = [sys.executable, "-m", "codeagent_jupyter.cli", "run", "split", "--model", "m"]
    argv += ["--base-url", scripted_model.url, "--workdir", str(ws), "--delegate", "3"]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # all three helpers have their kernel running
            helpers = list(children.glob("codeagent-helper-*"))
            if sum(1 for d in helpers if processes_in(d / "ws")) >= 3:
                break
            time.sleep(0.5)
        else:
            raise AssertionError("the three helpers did not start")
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, proc.stderr.read().decode()
    assert list(children.glob("codeagent-helper-*")) == []  # every helper's sandbox is gone
