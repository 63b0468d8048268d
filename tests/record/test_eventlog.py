"""The session notebook's event log: every event type survives encode → notebook → decode,
and notebooks written before the event bus still load and fold."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat

from codeagent_jupyter import events as ev
from codeagent_jupyter.core.bus import EventBus
from codeagent_jupyter.record.eventlog import NOT_LOGGED, decode_notebook
from codeagent_jupyter.record.recorder import NotebookRecorder, load_session
from codeagent_jupyter.timeline.fold import fold
from codeagent_jupyter.timeline.state import CellItem, FinishedItem, NoteItem, ToolItem
from codeagent_jupyter.widget.make import make_view
from tests import tool_events

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def one_of_each() -> list[ev.Event]:
    """At least one event of every type, shaped as the loop and the server publish them."""
    code = "print('hi')"
    cell = [{"output_type": "stream", "name": "stdout", "text": "hi\n"}]
    calls = [
        call("c1", "run_cell", json.dumps({"code": code})),
        call("c2", "write_file", '{"path": "a.txt", "content": "line\nnext"}'),  # raw newline
        call("c3", "read_file", "{not json"),
    ]
    return [
        ev.RunStarted(prompt="p", model="m", limits={"memory_mb": 1}, config={"max_steps": 3}),
        ev.ModelRetry(step=1, attempt=1, wait_s=0.5, reason="503"),
        ev.TextDelta(step=1, text="Let me"),
        ev.AssistantMessage(
            step=1, message={"role": "assistant", "content": "Let me", "tool_calls": calls}
        ),
        ev.UsageUpdated(
            step=1,
            prompt_tokens=5,
            completion_tokens=2,
            estimated=True,
            total_prompt_tokens=5,
            total_completion_tokens=2,
            total_estimated=True,
        ),
        ev.PlanUpdated(steps=[{"step": "run", "status": "in_progress"}]),
        tool_events.started("run_cell", {"code": code}, step=1, tool_call_id="c1"),
        ev.CellOutput(tool_call_id="c1", output=cell[0]),
        tool_events.finished(
            "run_cell",
            step=1,
            tool_call_id="c1",
            result="hi",
            code=code,
            outputs=cell,
            execution_count=1,
            duration_s=0.1,
        ),
        ev.ApprovalRequested(
            step=1,
            tool_call_id="c2",
            name="write_file",
            arguments={"path": "a.txt", "content": "line\nnext"},
        ),
        ev.ApprovalDecided(tool_call_id="c2", approved=True),
        ev.ToolCallStarted(  # as recorded before events carried traits: still read
            step=1,
            tool_call_id="c2",
            name="write_file",
            arguments={"path": "a.txt", "content": "line\nnext"},
        ),
        ev.ToolCallFinished(step=1, tool_call_id="c2", name="write_file", result="created a.txt"),
        ev.ModelNote(step=2, text="the server cannot stream tool calls; asked without streaming"),
        ev.ToolCallFinished(
            step=1, tool_call_id="c3", name="read_file", status="refused", result="Error: not JSON"
        ),
        ev.AssistantMessage(step=2, message={"role": "assistant", "content": "Done."}),
        ev.RunFinished(status=ev.ANSWERED, answer="Done.", steps=2, usage={"total_tokens": 7}),
        ev.CellDecision(cell_id="c1", accepted=True),
        ev.PackagesInstalled(
            packages=[{"name": "tinydep", "version": "1.0", "sha256": "ab" * 32}], reason="r"
        ),
        ev.NetworkRequest(
            method="GET",
            url="http://data.example.org/a.csv?x=1",
            status=200,
            bytes_up=120,
            bytes_down=4096,
            sha256="cd" * 32,
            rule="allow data.example.org",
            allowed=True,
        ),
        ev.NetworkApprovalRequested(
            host="data.example.org", port=443, method="CONNECT", rule="default ask", timeout_s=300
        ),
        ev.NetworkApprovalDecided(host="data.example.org", answer="session"),
        ev.ChildEvent(
            parent_tool_call_id="c9",
            child="1-1",
            task="t",
            event=ev.ToolCallFinished(
                step=1, tool_call_id="c1", name="run_cell", code=code, outputs=cell
            ).to_dict(),
        ),
        ev.SessionRestored(
            from_step=2,
            cells_rerun=3,
            seconds=0.4,
            files=5,
            problems=["cell 2 now fails: NameError"],
            summary="restored from step 2 (3 cells re-run, 0.4 s); 1 problem(s)",
        ),
    ]


def test_every_event_type_round_trips(tmp_path: Path) -> None:
    events = one_of_each()
    assert {e.type for e in events} == {cls.type for cls in ev.Event.__subclasses__()}
    recorder = NotebookRecorder(tmp_path / "s.ipynb")
    bus = EventBus([recorder.emit])
    published = [bus.deliver(e) for e in events]
    decoded = decode_notebook(nbformat.read(tmp_path / "s.ipynb", as_version=4))
    logged = [e for e in published if e.type not in NOT_LOGGED]
    assert [e.to_dict() for e in decoded] == [e.to_dict() for e in logged]
    assert {e.type for e in decoded} == {e.type for e in events} - NOT_LOGGED
    entries = recorder.notebook.metadata["codeagent"]["events"]
    assert all("message" not in e for e in entries)  # stored once, in the transcript
    assert sum("arguments_ref" in e for e in entries) == 2  # as sent; c2's raw newline too


def test_tool_call_ids_may_repeat_across_runs(tmp_path: Path) -> None:
    """Some servers number calls per request: each run's call decodes its own arguments."""
    recorder = NotebookRecorder(tmp_path / "s.ipynb")
    bus = EventBus([recorder.emit])
    for run, code in enumerate(["1 + 1", "2 + 2"]):
        bus.publish(ev.RunStarted, prompt=f"run {run}", run_index=run)
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [call("call_0", "run_cell", json.dumps({"code": code}))],
        }
        bus.publish(ev.AssistantMessage, step=1, message=message)
        bus.publish(
            ev.ToolCallStarted,
            step=1,
            tool_call_id="call_0",
            name="run_cell",
            arguments={"code": code},
        )
    recorder.save()  # a started call alone does not save: its step is still in flight
    decoded = load_session(tmp_path / "s.ipynb").events
    started = [e.arguments for e in decoded if isinstance(e, ev.ToolCallStarted)]
    assert started == [{"code": "1 + 1"}, {"code": "2 + 2"}]


def test_the_fold_of_the_demo_session() -> None:
    """The shared fold (server state and panel) over the demo notebook's event log."""
    events = load_session(FIXTURES / "demo_before_event_bus.ipynb").events
    state = fold(events)
    assert state.status == ev.ANSWERED and not state.running
    assert state.prompt and state.last_seq == events[-1].seq
    assert [p["status"] for p in state.plan] == ["done"] * len(state.plan)
    assert [c.number for c in state.cells] == [1, 2, 3, 4]
    assert all(c.finished and c.ran and c.outputs for c in state.cells)
    failed = [c for c in state.cells if c.status == "error"]
    assert failed and all(any(o["output_type"] == "error" for o in c.outputs) for c in failed)
    fixes = [c for c in state.cells if c.fixes is not None]
    assert [c.fixes for c in fixes] == [f.number for f in failed]
    assert isinstance(state.items[-1], FinishedItem) and state.model


def test_a_restore_is_a_line_of_the_session() -> None:
    """Resume and fork say in the panel (the shared fold) what was rebuilt and what was not."""
    restored = ev.SessionRestored(
        seq=0, from_step=2, cells_rerun=3, problems=["cell 2 now fails"], summary="restored"
    )
    state = fold([restored, ev.RunStarted(seq=1, prompt="go on")])
    note = state.items[0]
    assert isinstance(note, NoteItem) and note.text == "restored"
    assert note.problems == ("cell 2 now fails",)
    assert state.running and state.prompt == "go on"
    html = make_view(note, panel=None).html.value  # the panel's line, problems escaped
    assert "restored" in html and "not rebuilt: cell 2 now fails" in html
    hostile = NoteItem("n", "<img src=x onerror=alert(1)>", ("<b>x</b>",))
    assert "<img" not in make_view(hostile, panel=None).html.value


def test_a_notebook_from_before_the_event_bus_loads_folds_and_continues(tmp_path: Path) -> None:
    path = tmp_path / "old.ipynb"
    shutil.copy(FIXTURES / "session_before_event_bus.ipynb", path)
    session = load_session(path)
    assert session.prompts == ["count the rows of data.csv", "and the columns?"]
    assert [e.seq for e in session.events] == list(range(len(session.events)))
    state = fold(session.events)
    first, command, again = state.cells
    assert (first.decision, command.decision, again.decision) == (True, None, False)
    assert isinstance(state.tool_call("call_2"), CellItem) and command.tool == "run_command"
    assert command.notebook_source == "%%bash\nwc -l $HOME/data.csv"  # `!` would expand $HOME
    assert again.status == "timeout" and again.code.startswith("print(open")
    refused = state.tool_call("call_4")
    assert isinstance(refused, ToolItem) and refused.status == "refused"
    assert state.approval("call_5").approved is False
    assert state.status == ev.CANCELLED and state.tokens_estimated
    # A later decision continues the old notebook, numbered after its last event.
    bus = EventBus([NotebookRecorder(path).emit], history=session.events)
    bus.publish(ev.CellDecision, cell_id="call_3", accepted=True)
    again_loaded = load_session(path)
    assert again_loaded.events[-1].seq == session.events[-1].seq + 1
    assert fold(again_loaded.events).cells[1].decision is True
