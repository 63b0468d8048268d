"""Helpers' events under the parent's ``delegate`` call: in the parent's event stream (its
notebook's event log and the CLI trace) and as sections of the parent's session notebook."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat

from codeagent_jupyter import events as ev
from codeagent_jupyter.core.bus import EventBus
from codeagent_jupyter.record.eventlog import decode_notebook
from codeagent_jupyter.record.recorder import NotebookRecorder
from tests.cli.test_cli import codeagent
from tests.scripted_model import text, tool_calls

TASKS = ["helper task A", "helper task B"]


def responder(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The parent delegates two tasks (again on each request); each helper prints its
    letter, then answers."""
    first = next(m["content"] for m in messages if m["role"] == "user")
    answered = sum(m["role"] == "assistant" for m in messages)
    helper = next((t for t in TASKS if first.endswith(t)), None)
    if helper is None:  # the parent: each request delegates, then answers
        asked = messages[-1]["role"] == "user"
        return tool_calls(("delegate", {"tasks": TASKS})) if asked else text("both done")
    letter = helper[-1]
    if answered == 0:
        return tool_calls(("run_cell", {"code": f"print('from helper {letter}')"}))
    return text(f"helper {letter} done")


def run_delegating_session(scripted_model: Any, tmp_path: Path) -> tuple[Any, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    out = tmp_path / "parent.ipynb"
    scripted_model.set_script(responder)
    args = ("run", "split", "--model", "m", "--base-url", scripted_model.url, "--out", str(out))
    result = codeagent(*args, "--workdir", str(ws), "--delegate", "2", timeout=240)
    assert result.returncode == 0, result.stderr
    return result, out


def test_helper_events_reach_the_parent_stream_under_the_delegate_call(
    scripted_model: Any, tmp_path: Path
) -> None:
    result, out = run_delegating_session(scripted_model, tmp_path)
    events = decode_notebook(nbformat.read(out, as_version=4))
    delegate_call = next(
        e for e in events if isinstance(e, ev.ToolCallStarted) and e.name == "delegate"
    )
    children = [e for e in events if isinstance(e, ev.ChildEvent)]
    assert {e.parent_tool_call_id for e in children} == {delegate_call.tool_call_id}
    assert {e.child for e in children} == {"1-1", "1-2"}
    for label, letter in (("1-1", "A"), ("1-2", "B")):
        inner = [e.inner() for e in children if e.child == label]
        assert {e.task for e in children if e.child == label} == {f"helper task {letter}"}
        kinds = [e.type for e in inner]
        assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
        cell = next(e for e in inner if isinstance(e, ev.ToolCallFinished))
        assert cell.outputs[0]["text"] == f"from helper {letter}\n"  # decoded from its cell
        assert inner[-1].answer == f"helper {letter} done"
    # Every helper event sits between the delegate call's start and its end, and the parent's
    # own run is not ended by a helper's run_finished.
    finished = next(
        e for e in events if isinstance(e, ev.ToolCallFinished) and e.name == "delegate"
    )
    assert all(delegate_call.seq < e.seq < finished.seq for e in children)
    assert [e.answer for e in events if isinstance(e, ev.RunFinished)] == ["both done"]
    # The CLI trace shows them, marked with the helper.
    assert "[helper 1-1] -- step 1: run_cell" in result.stderr
    assert "[helper 1-2]    | print('from helper B')" in result.stderr
    # Their JSON form (what the server's WebSocket sends) carries the new fields.
    wire = children[0].to_dict()
    assert wire["type"] == "child_event"
    assert wire["parent_tool_call_id"] == delegate_call.tool_call_id
    assert ev.Event.from_dict(json.loads(json.dumps(wire))) == children[0]


def test_helpers_are_sections_of_the_parent_notebook(scripted_model: Any, tmp_path: Path) -> None:
    _, out = run_delegating_session(scripted_model, tmp_path)
    nb = nbformat.read(out, as_version=4)
    nbformat.validate(nb)
    metas = [c.metadata["codeagent"] for c in nb.cells]
    delegate_id = next(m["tool_call_id"] for m in metas if m.get("tool") == "delegate")
    for label, letter in (("1-1", "A"), ("1-2", "B")):
        section = [i for i, m in enumerate(metas) if m.get("child") == label]
        assert section == list(range(section[0], section[-1] + 1))  # in one piece
        heading, *cells = (nb.cells[i] for i in section)
        assert heading.cell_type == "markdown"
        assert heading.source == f"### Helper {label}: helper task {letter}"
        assert heading.metadata["codeagent"]["kind"] == "helper"
        assert all(c.metadata["codeagent"]["parent_tool_call_id"] == delegate_id for c in cells)
        code = [c for c in cells if c.cell_type == "code"]
        assert [c.source for c in code] == [f"print('from helper {letter}')"]
        assert code[0].outputs[0]["text"] == f"from helper {letter}\n"
        assert cells[-1].source == f"helper {letter} done"
    # The parent's own cells come after the sections and the parent's conversation is its own.
    assert nb.cells[-1].source == "both done" and "child" not in metas[-1]
    transcript = nb.metadata["codeagent"]["transcript"]
    assert sum(len(run) for run in transcript) == 2  # the delegate call and the answer
    # Helpers keep their own notebooks too, next to the session's.
    session_id = nb.metadata["codeagent"]["session_id"]
    own = sorted(p.name for p in (tmp_path / "helpers" / session_id).glob("*.ipynb"))
    assert own == ["helper-1-1.ipynb", "helper-1-2.ipynb"]
    # Their cells ran in the helpers' sandboxes: re-running the session leaves them alone.
    ws = str(tmp_path / "ws")
    checked = codeagent("replay", str(out), "--workdir", ws)
    assert checked.returncode == 0 and "0 of 0 cells match" in checked.stdout, checked.stderr
    scripted_model.set_script([text("resumed")])
    args = ("--model", "m", "--base-url", scripted_model.url, "--out", str(tmp_path / "r.ipynb"))
    resumed = codeagent("resume", str(out), "go on", *args, cwd=tmp_path / "ws")
    assert resumed.returncode == 0, resumed.stderr
    restored = nbformat.read(tmp_path / "r.ipynb", as_version=4).metadata.codeagent.restores
    assert restored[-1]["cells_rerun"] == 0


def test_a_resumed_session_numbers_its_helpers_after_the_earlier_ones(
    scripted_model: Any, tmp_path: Path
) -> None:
    _, out = run_delegating_session(scripted_model, tmp_path)
    scripted_model.set_script(responder)  # asked again, the model delegates again
    args = ("--model", "m", "--base-url", scripted_model.url, "--delegate", "2")
    resumed = codeagent("resume", str(out), "once more", *args, cwd=tmp_path / "ws", timeout=240)
    assert resumed.returncode == 0, resumed.stderr
    nb = nbformat.read(out, as_version=4)  # a resume continues the same notebook
    nbformat.validate(nb)
    headings = [c.source for c in nb.cells if c.metadata["codeagent"].get("kind") == "helper"]
    assert headings == [
        "### Helper 1-1: helper task A",
        "### Helper 1-2: helper task B",
        "### Helper 2-1: helper task A",
        "### Helper 2-2: helper task B",
    ]
    assert "[helper 2-2] -- step 1: run_cell" in resumed.stderr


def test_sections_stay_whole_and_in_task_order_whatever_the_arrival_order(
    tmp_path: Path,
) -> None:
    """Helpers run at once: their events interleave, and a later task may start first."""
    recorder = NotebookRecorder(tmp_path / "s.ipynb")
    bus = EventBus([recorder.emit])
    bus.publish(ev.RunStarted, prompt="split")
    bus.publish(ev.ToolCallStarted, step=1, tool_call_id="d", name="delegate", arguments={})

    def helper(child: str, event: ev.Event) -> None:
        task = f"task {child}"
        bus.publish(
            ev.ChildEvent, parent_tool_call_id="d", child=child, task=task, event=event.to_dict()
        )

    def cell(n: int) -> ev.ToolCallFinished:
        return ev.ToolCallFinished(step=n, tool_call_id=f"c{n}", name="run_cell", code=f"{n}")

    helper("1-3", ev.RunStarted(prompt="task 1-3"))
    helper("1-1", ev.RunStarted(prompt="task 1-1"))
    helper("1-3", cell(1))
    helper("1-2", ev.RunStarted(prompt="task 1-2"))
    helper("1-1", cell(1))
    helper("1-2", cell(1))
    helper("1-3", cell(2))
    helper("1-1", ev.RunFinished(answer="one"))
    nb = nbformat.read(tmp_path / "s.ipynb", as_version=4)
    nbformat.validate(nb)
    shown = [(c.metadata.codeagent.get("child"), c.source) for c in nb.cells[1:]]
    assert shown == [
        ("1-1", "### Helper 1-1: task 1-1"),
        ("1-1", "1"),
        ("1-1", "one"),
        ("1-2", "### Helper 1-2: task 1-2"),
        ("1-2", "1"),
        ("1-3", "### Helper 1-3: task 1-3"),
        ("1-3", "1"),
        ("1-3", "2"),
    ]
