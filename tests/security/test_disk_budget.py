"""Sparse files against the workspace disk budget, for real: the CLI, helpers, a live cell.

The attack, as it was found: with ``--disk-mb 16 --delegate 1``, six sparse
48 MiB files (a few KiB on disk) passed a budget that counted blocks, then every copy
(the snapshot read, the helper's workspace, the copy back) wrote all 288 MiB. The budget
now counts apparent size, is guarded for the sandbox's whole life (the first file past it
stops the sandbox: 48 MiB, or a few files more if they come within the same moment), and
every copy the CLI makes into a workspace checks its bytes against the target's budget
before writing.

``--isolation none`` lets these tests run where bubblewrap is missing (CI lane 2): they
are about the budget, which the client enforces the same way with or without it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from textwrap import dedent
from typing import Any

import pytest

from codeagent_jupyter.config import AgentConfig
from codeagent_jupyter.core.loop import AgentLoop
from codeagent_jupyter.models.openai_chat import OpenAIChatModel
from codeagent_jupyter.sandbox import Sandbox, SandboxLimits
from codeagent_jupyter.sandbox.zygote_manager import manager_class
from codeagent_jupyter.tools import ToolBox
from tests.cli.test_cli import codeagent
from tests.scripted_model import delay, text, tool_calls
from tests.zygotes import lane_start, running_zygote

MIB = 1 << 20
SPARSE = dedent(
    """
    for i in range(6):  # 48 MiB each, one byte written: ~0 MiB of blocks
        with open(f"sparse{i}.bin", "wb") as f:
            f.seek((48 << 20) - 1)
            f.write(bytes([i + 1]))
    print("made")
    """
)
LATER = """
import threading, time
def later():
    time.sleep(1)
    for i in range(6):
        with open(f"sparse{i}.bin", "wb") as f:
            f.seek((48 << 20) - 1)
            f.write(bytes([i + 1]))
threading.Thread(target=later).start()
print("started")
"""
"""The same files, made by a thread after the cell has returned (past the cell's check)."""
HELPER_TASK = "look at the files"
STOPPED = re.compile(r"workspace disk budget of 16 MiB exceeded \((\d+) MiB used\)")
"""The reason a run stops on: 48 MiB (one sparse file) up to 288 (all six)."""


def stopped_at(text: str) -> int:
    """The MiB the budget's reason in ``text`` names (at least one sparse file's 48)."""
    found = STOPPED.search(text)
    assert found is not None, text
    used = int(found.group(1))
    assert 48 <= used <= 288, text
    return used


def _apparent(ws: Path) -> int:
    """Bytes of the files under ``ws`` by their length (``.codeagent/`` left out)."""
    total = 0
    for root, dirs, files in os.walk(ws):
        dirs[:] = [d for d in dirs if not (Path(root) == ws and d == ".codeagent")]
        total += sum(os.lstat(os.path.join(root, name)).st_size for name in files)
    return total


def _run(scripted_model: Any, ws: Path, *flags: str, tmp: Path) -> Any:
    args = ("run", "go", "--model", "m", "--base-url", scripted_model.url, "--workdir", str(ws))
    env = {"TMPDIR": str(tmp)}  # the helpers' workspaces go here, where the test can look
    return codeagent(*args, "--isolation", "none", *flags, env=env, timeout=600)


def _helper_reports(scripted_model: Any) -> list[dict[str, Any]]:
    """The ``delegate`` results the parent's model was shown."""
    found = []
    for request in scripted_model.requests:
        for message in request["messages"]:
            content = message.get("content") or ""
            if message["role"] == "tool" and content.startswith('{\n "helpers"'):
                found = json.JSONDecoder().raw_decode(content)[0]["helpers"]
    return found


def _parent_and_helper(parent: list[Any], helper: list[Any]) -> Any:
    """Stateless: the parent's turns in order, or the helper's when its task is asked."""

    def respond(messages: list[dict[str, Any]]) -> dict[str, Any]:
        first = next(m["content"] for m in messages if m["role"] == "user")
        turns = helper if first.endswith(HELPER_TASK) else parent
        answered = sum(m["role"] == "assistant" for m in messages)
        return turns[min(answered, len(turns) - 1)]

    return respond


def test_sparse_files_stop_the_run_before_any_helper_copies_them(
    scripted_model: Any, tmp_path: Path
) -> None:
    ws, tmp = tmp_path / "ws", tmp_path / "tmp"
    ws.mkdir()
    tmp.mkdir()
    scripted_model.set_script(
        _parent_and_helper(
            [
                tool_calls(("run_cell", {"code": SPARSE})),
                tool_calls(("delegate", {"tasks": [HELPER_TASK]})),
                text("done"),
            ],
            [tool_calls(("run_cell", {"code": "print('helper ran')"})), text("seen")],
        )
    )
    result = _run(scripted_model, ws, "--disk-mb", "16", "--delegate", "1", tmp=tmp)
    assert result.returncode == 1, result.stdout + result.stderr
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("codeagent: stopped: ")]
    used = stopped_at(line)
    assert len(scripted_model.requests) == 1  # stopped at the cell: no delegate call
    assert not list((ws / ".codeagent").glob("sessions/helpers/*/*.ipynb"))
    assert _apparent(ws) >= used * MIB  # apparent size: what every copy would write


def test_files_made_after_the_cell_never_reach_a_helpers_workspace(
    scripted_model: Any, tmp_path: Path
) -> None:
    ws, tmp = tmp_path / "ws", tmp_path / "tmp"
    ws.mkdir()
    tmp.mkdir()
    measure = "import os\nprint(sum(os.path.getsize(n) for n in os.listdir('.')))"
    scripted_model.set_script(
        _parent_and_helper(
            [
                tool_calls(("run_cell", {"code": LATER})),
                delay(4.0, tool_calls(("delegate", {"tasks": [HELPER_TASK]}))),
                tool_calls(("run_cell", {"code": "print('after')"})),
                text("done"),
            ],
            [tool_calls(("run_cell", {"code": measure})), text("seen")],
        )
    )
    result = _run(scripted_model, ws, "--disk-mb", "16", "--delegate", "1", tmp=tmp)
    (helper,) = _helper_reports(scripted_model)
    assert helper["status"] == "error", helper
    assert re.match(
        r"the helper could not run: restoring the snapshot \((\d+)\.0 MiB\)", helper["answer"]
    )
    assert "disk budget of 16 MiB" in helper["answer"] and "not written" in helper["answer"]
    assert list(tmp.glob("codeagent-helper-*")) == []
    # The sandbox was stopped when the thread crossed the budget, between calls; the
    # parent's next cell runs nothing and the run stops.
    assert result.returncode == 1, result.stdout + result.stderr
    (line,) = [ln for ln in result.stderr.splitlines() if ln.startswith("codeagent: stopped: ")]
    stopped_at(line)


def test_helpers_copies_back_stay_within_the_parents_budget(
    scripted_model: Any, tmp_path: Path
) -> None:
    ws, tmp = tmp_path / "ws", tmp_path / "tmp"
    ws.mkdir()
    tmp.mkdir()
    (ws / "base.bin").write_bytes(os.urandom(6 * MIB))
    tasks = [f"{HELPER_TASK} A", f"{HELPER_TASK} B"]

    def respond(messages: list[dict[str, Any]]) -> dict[str, Any]:
        first = next(m["content"] for m in messages if m["role"] == "user")
        answered = sum(m["role"] == "assistant" for m in messages)
        letter = next((t[-1] for t in tasks if first.endswith(t)), None)
        if letter is None:  # the parent
            return tool_calls(("delegate", {"tasks": tasks})) if answered == 0 else text("done")
        if answered == 0:  # each helper: 8 MiB, within its own 16 (6 + 8)
            code = f"import os\nopen('{letter}.bin', 'wb').write(os.urandom(8 << 20))"
            return tool_calls(("run_cell", {"code": code}))
        return text(f"wrote {letter}.bin")

    scripted_model.set_script(respond)
    result = _run(scripted_model, ws, "--disk-mb", "16", "--delegate", "2", tmp=tmp)
    assert result.returncode == 0, result.stdout + result.stderr
    helpers = _helper_reports(scripted_model)
    assert [h["status"] for h in helpers] == ["answered", "answered"]
    refused = [h for h in helpers if "files_not_copied" in h]
    assert len(refused) == 1 and refused[0]["files"] == [], helpers
    line = refused[0]["files_not_copied"]
    assert line.startswith(f"the files of helper {refused[0]['helper']} (8.0 MiB) would take")
    assert "disk budget of 16 MiB" in line and "\n" not in line
    assert _apparent(ws) <= 16 * MIB  # 6 + 8 copied; the second 8 stayed behind


@pytest.mark.parametrize("start", ["cold", "zygote"])
async def test_a_cell_that_crosses_the_budget_stops_the_sandbox(tmp_path: Path, start: str) -> None:
    """The sandbox's processes are stopped at once (the kernel's threads and children could
    go on writing through an interrupt); the cell ends with the budget as its reason. A
    zygote's fork too, where no cgroup reaches it (an unprivileged user): the host kills
    its process group, which holds the first process of its pid namespace."""
    limits = SandboxLimits(disk_mb=16, cell_timeout=120, memory_mb=1024)
    if start == "cold":
        await _crosses_and_recovers(tmp_path, limits, {"allow_unconfined": True})
        return
    with running_zygote(tmp_path) as zygote:
        workspace = tmp_path / "ws"
        workspace.mkdir()
        options = {"kernel_manager_class": manager_class(zygote)}
        await _crosses_and_recovers(workspace, limits, options)


async def _crosses_and_recovers(
    tmp_path: Path, limits: SandboxLimits, options: dict[str, Any]
) -> None:
    grow = dedent(
        """
        with open("sparse.bin", "wb") as f:
            f.seek((64 << 20) - 1)
            f.write(b"1")
        import time
        time.sleep(60)
        print("survived")
        """
    )
    async with Sandbox(workdir=tmp_path, limits=limits, **options) as sb:
        assert (await sb.execute("x = 41")).status == "ok"
        r = await sb.execute(grow)
        assert r.status == "error" and r.duration_s < 60
        assert r.over_budget is not None and r.over_budget.budget_mb == 16
        assert r.note.startswith(
            "workspace disk budget of 16 MiB exceeded (64 MiB used); "
            "the sandbox's processes were stopped; restarted; state lost"
        )
        streams = "".join(o.get("text", "") for o in r.outputs if o["output_type"] == "stream")
        assert "survived" not in streams
        # Still over: the next call runs nothing.
        r = await sb.execute("print('ran')")
        assert r.status == "error" and r.over_budget is not None and "ran" not in r.text
        assert r.note.endswith("the sandbox's processes were stopped between calls; nothing ran")
        (tmp_path / "sparse.bin").unlink()
        r = await sb.execute("print(1 + 1)")
        assert r.status == "ok" and r.text.strip() == "2" and r.over_budget is None, (
            r.note,
            r.text,
        )


async def test_write_file_calls_cannot_fill_past_the_budget(
    tmp_path: Path, scripted_model: Any
) -> None:
    """``write_file`` writes from the agent's process: no cell, so no cell's check. Each
    call is checked before it writes."""
    content = "x" * 4_500_000  # under the tool's 5 MB per call; four are over 16 MiB
    calls = [("write_file", {"path": f"part{i}.txt", "content": content}) for i in range(5)]
    scripted_model.set_script([tool_calls(*calls), text("written")])
    model = OpenAIChatModel("scripted", scripted_model.url, "k", backoff=0.01)
    limits = SandboxLimits(disk_mb=16, cell_timeout=30, memory_mb=1024)
    async with Sandbox(
        workdir=tmp_path, limits=limits, allow_unconfined=True, **lane_start(tmp_path)
    ) as sb:
        loop = AgentLoop(model, sb, ToolBox(sb, tmp_path), [], AgentConfig())
        await loop.run("write the parts")
    results = [m["content"] for m in loop.messages if m["role"] == "tool"]
    assert [r.startswith("created part") for r in results] == [True, True, True, False, False]
    assert results[3].startswith("Error: writing part3.txt (4.3 MiB) would take the workspace")
    assert "disk budget of 16 MiB" in results[3] and "\n" not in results[3]
    assert sorted(p.name for p in tmp_path.glob("part*")) == ["part0.txt", "part1.txt", "part2.txt"]
    assert _apparent(tmp_path) <= 16 * MIB
