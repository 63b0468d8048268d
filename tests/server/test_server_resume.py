"""Resume, fork and pause through the HTTP API: real server, real sandboxes, scripted model."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

import nbformat

from tests.scripted_model import text, tool_calls
from tests.server.helpers import Api, of_type, processes_in
from tests.server.test_lifecycle import ServerProcess, servers  # noqa: F401  (fixture)


def _cell(code: str) -> dict[str, Any]:
    return tool_calls(("run_cell", {"code": code}))


def _printed(events: list[dict[str, Any]]) -> list[str]:
    return [
        "".join(o.get("text", "") for o in e["outputs"] if o.get("output_type") == "stream")
        for e in of_type(events, "tool_call_finished")
    ]


async def test_fork_at_step_2_of_a_4_step_session(
    api: Api, scripted_model: Any, jp_data_dir: Path, jp_root_dir: Path
) -> None:
    scripted_model.set_script(
        [
            _cell("a = 1"),
            _cell("b = 2\nopen('f2.txt', 'w').write('two')"),
            _cell("c = 3\nopen('f3.txt', 'w').write('three')"),
            text("done"),
        ]
    )
    sid = (await api.start("build it"))["id"]
    await api.run_to_end(sid)
    before = len(scripted_model.requests)
    scripted_model.set_script([_cell("print(a, b, 'c' in globals())"), text("checked")])
    fork = await api.ok("POST", f"sessions/{sid}/fork", {"step": 2, "prompt": "check"}, 201)
    assert fork["id"] != sid
    events = await api.run_to_end(fork["id"])
    assert "1 2 False\n" in _printed(events)  # a and b of steps 1-2; c of step 3 absent
    restored = [e for e in events if e["type"] == "session_restored"]
    assert [(e["from_step"], e["cells_rerun"]) for e in restored] == [(2, 2)]
    summary = (await api.ok("GET", f"sessions/{fork['id']}"))["restored"]
    assert summary["cells_rerun"] == 2
    assert summary["summary"].startswith("restored from step 2 (2 cells re-run")
    assert restored[0]["summary"] == summary["summary"]  # the panel's line
    path = jp_data_dir / "codeagent" / "sessions" / f"{fork['id']}.ipynb"
    meta = nbformat.read(path, as_version=4).metadata.codeagent
    assert meta.parent["session_id"] == sid and meta.parent["step"] == 2
    sent = json.dumps(scripted_model.requests[before]["messages"])
    assert "build it" in sent and "f2.txt" in sent and "f3.txt" not in sent

    code, error = await api.call("POST", f"sessions/{sid}/fork", {"step": 9, "prompt": "x"})
    assert code == 400 and "step 9 is not in" in error["message"]
    code, error = await api.call("POST", f"sessions/{sid}/fork", {"step": 1})
    assert code == 400 and error["message"] == "missing field: prompt"
    code, _ = await api.call("POST", "sessions/nope/fork", {"prompt": "x"})
    assert code == 404


async def test_pause_releases_the_kernel_and_a_message_resumes(
    api: Api, scripted_model: Any, jp_root_dir: Path
) -> None:
    scripted_model.set_script(
        [_cell("import time\ntime.sleep(3)\np = 'kept'"), _cell("q = 2"), text("never")]
    )
    sid = (await api.start("slow work"))["id"]
    ws = await api.connect(sid)
    await api.read_until(ws, lambda e: e["type"] == "tool_call_started")
    ws.close()
    paused = await api.ok("POST", f"sessions/{sid}/pause")
    assert paused["paused"] is True and paused["state"] == "closed"
    detail = await api.ok("GET", f"sessions/{sid}")
    finished = of_type(detail["events"], "tool_call_finished")
    assert [f["status"] for f in finished] == ["ok"]  # the step in flight ended, no more
    assert detail["events"][-1]["reason"] == "paused by the user"
    for _ in range(50):
        if not processes_in(jp_root_dir):
            break
        await asyncio.sleep(0.2)
    assert processes_in(jp_root_dir) == []  # no kernel left

    scripted_model.set_script([_cell("print(p)"), text("resumed")])
    resumed = await api.ok("POST", f"sessions/{sid}/messages", {"text": "go on"}, 202)
    # Answered at once: the 3 s cell is re-run in the background, not inside the request.
    assert resumed["id"] == sid and resumed["state"] == "starting"
    events = await api.run_to_end(sid, since=detail["next_seq"])
    assert "kept\n" in _printed(events)
    assert events[-1]["status"] == "answered"
    assert (await api.ok("GET", f"sessions/{sid}"))["restored"]["cells_rerun"] == 1

    # Deleted while its cells are being re-run: the rebuild stops and its kernel goes.
    await api.ok("POST", f"sessions/{sid}/pause")
    await api.ok("POST", f"sessions/{sid}/messages", {"text": "again"}, 202)
    for _ in range(50):  # the new sandbox is up and re-running the 3 s cell
        if processes_in(jp_root_dir):
            break
        await asyncio.sleep(0.1)
    assert processes_in(jp_root_dir)
    await api.ok("DELETE", f"sessions/{sid}")
    for _ in range(50):
        if not processes_in(jp_root_dir):
            break
        await asyncio.sleep(0.2)
    assert processes_in(jp_root_dir) == []


def test_sigkill_mid_run_then_restart_and_resume(
    tmp_path: Path,
    scripted_model: Any,
    servers: list[ServerProcess],  # noqa: F811
) -> None:
    root, home = tmp_path / "root", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    scripted_model.set_script(
        [
            _cell("a = 41\nopen('kept.txt', 'w').write('from step 1')"),
            _cell("import time; time.sleep(120)"),
            text("never reached"),
        ]
    )
    first = ServerProcess(root, home, scripted_model.url).start()
    servers.append(first)
    sid = first.call("POST", "sessions", {"prompt": "two steps, the second slow"})["id"]

    def second_cell_running() -> bool:
        events = first.call("GET", f"sessions/{sid}")["events"]
        return sum(e["type"] == "tool_call_started" for e in events) == 2

    first.wait_for(second_cell_running)
    assert first.proc is not None
    first.proc.send_signal(signal.SIGKILL)
    first.proc.wait(10)
    for pid in processes_in(root):
        with contextlib.suppress(ProcessLookupError):  # it may end with its server first
            os.kill(pid, signal.SIGKILL)
    (root / "kept.txt").unlink()  # the workspace lost it meanwhile: the snapshot has it

    second = ServerProcess(root, home, scripted_model.url).start()
    servers.append(second)
    assert second.call("GET", f"sessions/{sid}")["status"] == "interrupted"
    before = len(scripted_model.requests)
    scripted_model.set_script([_cell("print(a + 1, open('kept.txt').read())"), text("resumed")])
    second.call("POST", f"sessions/{sid}/messages", {"text": "carry on"})

    def answered() -> Any:
        detail = second.call("GET", f"sessions/{sid}")
        return detail if detail["status"] == "answered" else None

    detail = second.wait_for(answered, timeout=60)
    assert detail["restored"]["summary"].startswith("restored from the end (1 cells re-run")
    assert "42 from step 1\n" in _printed(detail["events"])
    messages = scripted_model.requests[before]["messages"]
    assert messages[1] == {"role": "user", "content": "two steps, the second slow"}
    assert "from step 1" in json.dumps(messages[2]["tool_calls"])  # step 1's call, as sent
    assert messages[3]["role"] == "tool"
    assert messages[-1]["role"] == "user"  # the message, after the budget it has left
    assert messages[-1]["content"].startswith("[budget left: ")
    assert messages[-1]["content"].endswith("]\n\ncarry on")
