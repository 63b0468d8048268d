"""Sessions through REST + WebSocket against a real server, real sandboxes, the scripted model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.scripted_model import text, tool_calls
from tests.server.helpers import SECRET, Api, of_type


def cell_text(event: dict[str, Any]) -> str:
    return "".join(
        out.get("text", "") if isinstance(out.get("text"), str) else "".join(out.get("text", []))
        for out in event["outputs"]
        if out.get("output_type") == "stream"
    )


@pytest.mark.codeagent(api_key=None, api_key_env="AGENT_KEY_FOR_TEST")
async def test_complete_session_with_a_notebook(
    api: Api,
    scripted_model: Any,
    jp_root_dir: Path,
    jp_data_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGENT_KEY_FOR_TEST", SECRET)  # the key comes from the server's env
    folder = jp_root_dir / "work"
    folder.mkdir()
    (folder / "sales.csv").write_text("month,revenue\n1,10\n")
    user_nb = nbformat.v4.new_notebook()
    user_nb.cells.append(nbformat.v4.new_code_cell("threshold = 17  # the user's own cell"))
    nbformat.write(user_nb, folder / "analysis.ipynb")
    scripted_model.set_script(
        [
            tool_calls(
                (
                    "run_cell",
                    {"code": "import os\nprint(os.getcwd(), os.environ.get('AGENT_KEY_FOR_TEST'))"},
                ),
            ),
            tool_calls(("run_cell", {"code": "x = 6 * 7"})),
            tool_calls(("run_cell", {"code": "print(x)"})),
            text("x is 42"),
        ]
    )
    session = await api.start("compute x", notebook_path="work/analysis.ipynb")
    sid = session["id"]
    assert session["state"] in ("running", "idle")
    assert session["notebook_path"] == "work/analysis.ipynb"
    assert session["prompt"] == "compute x"

    events = await api.run_to_end(sid)
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert events[0]["type"] == "run_started"
    assert events[-1]["status"] == "answered"
    assert events[-1]["answer"] == "x is 42"
    finished = of_type(events, "tool_call_finished")
    assert [f["status"] for f in finished] == ["ok", "ok", "ok"]
    assert cell_text(finished[0]).strip() == f"{folder.resolve()} None"  # no key in the kernel
    assert cell_text(finished[2]).strip() == "42"
    assert scripted_model.headers[0]["authorization"] == f"Bearer {SECRET}"
    first_request = json.dumps(scripted_model.requests[0]["messages"])
    assert "threshold = 17" in first_request  # the notebook's cells reached the model
    assert "sales.csv" in first_request

    detail = await api.ok("GET", f"sessions/{sid}")
    assert detail["state"] == "idle" and detail["status"] == "answered"
    assert detail["events"] == events
    listed = await api.ok("GET", "sessions")
    assert [s["id"] for s in listed] == [sid]
    notebook = nbformat.from_dict(await api.ok("GET", f"sessions/{sid}/notebook"))
    nbformat.validate(notebook)
    code_cells = [c for c in notebook.cells if c.cell_type == "code"]
    assert [c.source for c in code_cells][1:] == ["x = 6 * 7", "print(x)"]
    on_disk = jp_data_dir / "codeagent" / "sessions" / f"{sid}.ipynb"
    assert on_disk.is_file()  # kept outside the server root, out of the sandbox's reach
    assert not (jp_root_dir / ".codeagent").exists()
    everything = json.dumps([detail, listed, notebook]) + on_disk.read_text()
    assert SECRET not in everything

    closed = await api.ok("DELETE", f"sessions/{sid}")
    assert closed["state"] == "closed"
    code, body = await api.call("POST", f"sessions/{sid}/messages", {"text": "more"})
    assert code == 409 and "closed" in body["message"]


async def test_two_clients_and_reconnect_with_since(api: Api, scripted_model: Any) -> None:
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": "print('one')"})),
            tool_calls(("run_cell", {"code": "import time; time.sleep(1.5); print('two')"})),
            text("done"),
        ]
    )
    session = await api.start("two steps")
    sid = session["id"]
    watcher = await api.connect(sid)
    flaky = await api.connect(sid)
    # The flaky client drops after the first step, then reconnects from where it was.
    first_part = await api.read_until(flaky, lambda e: e["type"] == "tool_call_finished")
    flaky.close()
    resumed = await api.connect(sid, since=first_part[-1]["seq"] + 1)
    rest, everything = await asyncio.gather(
        api.read_until(resumed, lambda e: e["type"] == "run_finished"),
        api.read_until(watcher, lambda e: e["type"] == "run_finished"),
    )
    resumed.close()
    watcher.close()
    assert first_part + rest == everything
    assert rest, "the reconnect should have received live events"
    assert of_type(rest, "tool_call_started"), "the second cell ran after the reconnect"
    assert [e["seq"] for e in everything] == list(range(len(everything)))
    # A late client replays the whole finished run.
    assert await api.run_to_end(sid) == everything


async def test_follow_up_keeps_kernel_state(api: Api, scripted_model: Any) -> None:
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": "secret = 41"})),
            text("stored"),
            tool_calls(("run_cell", {"code": "import time; time.sleep(0.5); print(secret + 1)"})),
            text("42"),
        ]
    )
    session = await api.start("store a number")
    sid = session["id"]
    first = await api.run_to_end(sid)
    reply = await api.ok("POST", f"sessions/{sid}/messages", {"text": "add one"}, status=202)
    assert reply["state"] == "running"
    code, body = await api.call("POST", f"sessions/{sid}/messages", {"text": "again"})
    assert code == 409 and "running" in body["message"]
    second = await api.run_to_end(sid, since=len(first))
    assert second[0]["type"] == "run_started" and second[0]["run_index"] == 1
    assert cell_text(of_type(second, "tool_call_finished")[0]).strip() == "42"
    assert second[-1]["status"] == "answered"
    notebook = nbformat.from_dict(await api.ok("GET", f"sessions/{sid}/notebook"))
    requests = [c.source for c in notebook.cells if c.source.startswith("**Request:**")]
    assert requests == ["**Request:** store a number", "**Request:** add one"]


async def test_cancel_a_busy_loop(api: Api, scripted_model: Any) -> None:
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": "n = 0\nwhile True:\n    n += 1"})),
            tool_calls(("run_cell", {"code": "print('alive', n > 0)"})),
            text("ok"),
        ]
    )
    session = await api.start("spin")
    sid = session["id"]
    ws = await api.connect(sid)
    await api.read_until(ws, lambda e: e["type"] == "tool_call_started")
    await asyncio.sleep(0.3)
    reply = await api.ok("POST", f"sessions/{sid}/cancel")
    assert reply["cancelled"] is True
    events = await api.read_until(ws, lambda e: e["type"] == "run_finished", timeout=20)
    assert events[-1]["status"] == "cancelled"
    assert (await api.ok("GET", f"sessions/{sid}"))["state"] == "idle"
    again = await api.ok("POST", f"sessions/{sid}/cancel")
    assert again["cancelled"] is False
    # The kernel survived the interrupt and kept its state: a follow-up uses it.
    await api.ok("POST", f"sessions/{sid}/messages", {"text": "still there?"}, status=202)
    events = await api.read_until(ws, lambda e: e["type"] == "run_finished")
    ws.close()
    assert cell_text(of_type(events, "tool_call_finished")[0]).strip() == "alive True"


@pytest.mark.codeagent(approval={"run_cell": "ask"})
async def test_approval_flow(api: Api, scripted_model: Any, jp_root_dir: Path) -> None:
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": "open('approved.txt', 'w').write('yes')"})),
            tool_calls(("run_cell", {"code": "open('denied.txt', 'w').write('no')"})),
            text("done"),
        ]
    )
    session = await api.start("write two files")
    sid = session["id"]
    ws = await api.connect(sid)
    asked = await api.read_until(ws, lambda e: e["type"] == "approval_requested")
    first = asked[-1]["tool_call_id"]
    assert asked[-1]["arguments"]["code"].startswith("open('approved.txt'")
    assert not of_type(asked, "tool_call_started"), "the cell must wait for the decision"
    assert (await api.ok("GET", f"sessions/{sid}"))["pending_approvals"] == [first]
    await api.ok("POST", f"sessions/{sid}/approvals/{first}", {"approve": True})
    code, _ = await api.call("POST", f"sessions/{sid}/approvals/{first}", {"approve": True})
    assert code == 409  # already decided

    asked = await api.read_until(ws, lambda e: e["type"] == "approval_requested")
    second = asked[-1]["tool_call_id"]
    await api.ok("POST", f"sessions/{sid}/approvals/{second}", {"approve": False})
    events = await api.read_until(ws, lambda e: e["type"] == "run_finished")
    ws.close()
    decided = of_type(asked + events, "approval_decided")
    assert [(d["tool_call_id"], d["approved"]) for d in decided] == [(first, True), (second, False)]
    statuses = {
        f["tool_call_id"]: f["status"] for f in of_type(asked + events, "tool_call_finished")
    }
    assert statuses == {first: "ok", second: "denied"}
    assert (jp_root_dir / "approved.txt").read_text() == "yes"
    assert not (jp_root_dir / "denied.txt").exists()


async def test_accept_and_reject_are_recorded(
    api: Api, scripted_model: Any, jp_data_dir: Path
) -> None:
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": "a = 1"}), ("run_cell", {"code": "b = 2"})),
            tool_calls(("run_cell", {"code": "import time; time.sleep(30)"})),
            text("done"),
        ]
    )
    session = await api.start("three cells")
    sid = session["id"]
    ws = await api.connect(sid)
    events = await api.read_until(
        ws, lambda e: e["type"] == "tool_call_started" and e["arguments"]["code"].startswith("imp")
    )
    first, second = (f["tool_call_id"] for f in of_type(events, "tool_call_finished"))
    running = events[-1]["tool_call_id"]
    # Finished cells can be decided while the run goes on; the running one cannot.
    code, body = await api.call("POST", f"sessions/{sid}/cells/{running}/accept")
    assert code == 409 and "still running" in body["message"]
    accepted = await api.ok("POST", f"sessions/{sid}/cells/{first}/accept")
    assert accepted["type"] == "cell_decision" and accepted["accepted"] is True
    await api.ok("POST", f"sessions/{sid}/cancel")
    await api.read_until(ws, lambda e: e["type"] == "run_finished", timeout=20)
    await api.ok("POST", f"sessions/{sid}/cells/{second}/reject")
    decision = await api.read_until(ws, lambda e: e["type"] == "cell_decision")
    ws.close()
    assert decision[-1]["cell_id"] == second and decision[-1]["accepted"] is False

    path = jp_data_dir / "codeagent" / "sessions" / f"{sid}.ipynb"
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    marks = {
        c.metadata["codeagent"].get("tool_call_id"): c.metadata["codeagent"].get("accepted")
        for c in notebook.cells
        if c.cell_type == "code"
    }
    assert marks == {first: True, second: False, running: None}
    logged = [e for e in notebook.metadata["codeagent"]["events"] if e["type"] == "cell_decision"]
    assert [(e["cell_id"], e["accepted"]) for e in logged] == [(first, True), (second, False)]
    detail = await api.ok("GET", f"sessions/{sid}")
    assert [(e["cell_id"], e["accepted"]) for e in of_type(detail["events"], "cell_decision")] == [
        (first, True),
        (second, False),
    ]
    seqs = [e["seq"] for e in detail["events"]]
    assert seqs == sorted(set(seqs)), "decisions share the session's sequence numbers"


@pytest.mark.codeagent(idle_timeout=1, warm_ttl=1)
async def test_idle_sessions_and_unused_warm_sandboxes_are_released(
    api: Api, scripted_model: Any
) -> None:
    scripted_model.set_script([text("hi")])
    warm = await api.ok("POST", "warm")
    assert warm["pool"]["warm_held"] == 1
    session = await api.start("hello")  # takes the warm sandbox
    assert (await api.ok("GET", "health"))["pool"]["warm_held"] == 0
    await api.run_to_end(session["id"])
    await api.ok("POST", "warm")
    for _ in range(50):
        state = (await api.ok("GET", f"sessions/{session['id']}"))["state"]
        held = (await api.ok("GET", "health"))["pool"]["warm_held"]
        if state == "closed" and held == 0:
            break
        await asyncio.sleep(0.2)
    assert (state, held) == ("closed", 0)
    scripted_model.set_script([text("again")])
    code, body = await api.call("POST", f"sessions/{session['id']}/messages", {"text": "more"})
    assert code == 202, body
    assert (await api.run_to_end(session["id"], since=body["next_seq"]))[-1]["answer"] == "again"
    restored = (await api.ok("GET", f"sessions/{session['id']}"))["restored"]
    assert restored["cells_rerun"] == 0  # idle-reaped: resumed


@pytest.mark.codeagent(model=None, recording="demo/recorded.ipynb")
async def test_recorded_demo_needs_no_model(api: Api, jp_root_dir: Path) -> None:
    """A classroom without an API key: every session replays the recorded demo's turns."""
    demo = Path(__file__).resolve().parents[2] / "examples" / "demo.ipynb"
    (jp_root_dir / "demo").mkdir()
    (jp_root_dir / "demo" / "recorded.ipynb").write_text(demo.read_text())
    health = await api.ok("GET", "health")
    assert health["model"]["name"] == "recorded" and health["model"]["configured"]
    code, body = await api.call("POST", "sessions", {"prompt": "x", "model": "gpt-4o"})
    assert code == 403, body

    session = await api.start("plot monthly revenue")
    events = await api.run_to_end(session["id"])
    assert events[-1]["status"] == "answered", events[-1]
    cells = of_type(events, "tool_call_finished")
    assert [c["status"] for c in cells if c["name"] == "run_cell"] == ["ok", "error", "ok", "ok"]
    assert any("image/png" in o.get("data", {}) for c in cells for o in c["outputs"])


async def test_run_command_output_streams_to_a_websocket_client(
    api: Api, scripted_model: Any
) -> None:
    """A shell command's output reaches the client while the command still runs."""
    command = "echo first; sleep 2; echo second"
    scripted_model.set_script([tool_calls(("run_command", {"command": command})), text("ran")])
    session = await api.start("run a command")
    ws = await api.connect(session["id"])
    seen = await api.read_until(
        ws, lambda e: e["type"] in ("cell_output", "tool_call_finished"), timeout=30
    )
    live = seen[-1]
    assert live["type"] == "cell_output", "the output came only with the finished call"
    assert live["output"]["text"] == "first\n" and live["tool_call_id"]
    rest = await api.read_until(ws, lambda e: e["type"] == "run_finished", timeout=30)
    (finished,) = of_type(rest, "tool_call_finished")
    streamed = [e["output"]["text"] for e in rest if e["type"] == "cell_output"]
    assert "".join(["first\n", *streamed]) == "first\nsecond\n" == cell_text(finished)
    ws.close()
