"""Session notebooks: events in, a valid re-executable notebook out, and back again."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.core.bus import EventBus
from codeagent_jupyter.errors import ConfigError
from codeagent_jupyter.record.eventlog import decode_notebook
from codeagent_jupyter.record.recorder import OUTPUT_CAP, NotebookRecorder, load_session
from tests import tool_events

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJ"
    "RU5ErkJggg=="
)
TRACEBACK = ["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"]


def call(call_id: str, name: str, args: dict) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


def assistant(step: int, text: str | None, *calls: dict) -> ev.AssistantMessage:
    message: dict = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = list(calls)
    return ev.AssistantMessage(step=step, message=message)


def tool(step: int, call_id: str, name: str, args: dict, **finished) -> list[ev.Event]:
    """A tool call as the loop reports it: the assistant turn, started, (outputs), finished."""
    started = tool_events.started(name, args, step=step, tool_call_id=call_id)
    live = [ev.CellOutput(tool_call_id=call_id, output=o) for o in finished.get("outputs", [])]
    done = tool_events.finished(name, step=step, tool_call_id=call_id, **finished)
    return [assistant(step, None, call(call_id, name, args)), started, *live, done]


def first_run(prompt: str = "Plot y = 1/x", run_index: int = 0) -> list[ev.Event]:
    plan = [{"step": "Compute", "status": "in_progress"}, {"step": "Plot", "status": "pending"}]
    events: list[ev.Event] = [
        ev.RunStarted(
            prompt=prompt,
            run_index=run_index,
            model="m-1",
            base_url="http://h/v1",
            limits={"memory_mb": 512},
            enforcement={"memory": "rlimit"},
        ),
        ev.PlanUpdated(steps=plan),
        ev.TextDelta(step=1, text="Let me"),
        *tool(
            1,
            "c1",
            "run_cell",
            {"code": "1/0"},
            status="error",
            result="ZeroDivisionError",
            code="1/0",
            execution_count=1,
            duration_s=0.01,
            outputs=[
                {
                    "output_type": "error",
                    "ename": "ZeroDivisionError",
                    "evalue": "division by zero",
                    "traceback": TRACEBACK,
                }
            ],
        ),
        *tool(
            2,
            "c2",
            "run_cell",
            {"code": "print('ok')\nshow()"},
            status="ok",
            result="ok",
            code="print('ok')\nshow()",
            execution_count=2,
            duration_s=0.2,
            outputs=[
                {"output_type": "stream", "name": "stdout", "text": "ok\n"},
                {
                    "output_type": "display_data",
                    "metadata": {},
                    "data": {"image/png": PNG, "text/plain": "<Figure>"},
                },
            ],
        ),
        *tool(
            3,
            "c3",
            "run_command",
            {"command": "ls -la"},
            status="ok",
            result="total 0",
            code="ls -la",
            outputs=[{"output_type": "stream", "name": "stdout", "text": "total 0\n"}],
        ),
        *tool(4, "c4", "write_file", {"path": "a.py", "content": "x = 1\n"}, result="created a.py"),
        *tool(
            5,
            "c5",
            "read_file",
            {"path": "missing.txt"},
            status="error",
            result="file not found: missing.txt",
        ),
        ev.UsageUpdated(
            step=5,
            prompt_tokens=100,
            completion_tokens=20,
            total_prompt_tokens=100,
            total_completion_tokens=20,
        ),
        assistant(6, "y = 1/x is plotted above."),
        ev.UsageUpdated(step=6, prompt_tokens=50, completion_tokens=5),
        ev.RunFinished(
            status=ev.ANSWERED,
            answer="y = 1/x is plotted above.",
            steps=6,
            duration_s=1.5,
            usage={"prompt_tokens": 150, "completion_tokens": 25},
        ),
    ]
    return [e.__class__(**{**e.__dict__, "seq": i}) for i, e in enumerate(events)]


def read_valid(path: Path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.nbformat == 4 and nb.nbformat_minor >= 5
    return nb


def test_events_become_a_valid_notebook_after_every_step(tmp_path: Path):
    path = tmp_path / "s.ipynb"
    rec = NotebookRecorder(path, session_id="sess-1")
    for event in first_run():
        rec.emit(event)
        if path.exists():
            read_valid(path)
        assert [p.name for p in tmp_path.iterdir()] in ([], ["s.ipynb"])  # no temp files left
    nb = read_valid(path)
    kinds = [(c.cell_type, c.metadata.codeagent["kind"]) for c in nb.cells]
    assert kinds == [
        ("markdown", "prompt"),
        ("markdown", "plan"),
        *[("code", "tool")] * 4,
        ("markdown", "tool"),
        ("markdown", "answer"),
    ]
    prompt, plan, fail, fix, cmd, write, note, answer = nb.cells
    assert prompt.source == "**Request:** Plot y = 1/x"
    assert plan.source == "**Plan**\n\n- [ ] **Compute** *(in progress)*\n- [ ] Plot"
    assert fail.source == "1/0" and fail.execution_count == 1
    assert fail.outputs[0].output_type == "error" and fail.outputs[0].traceback == TRACEBACK
    assert fail.metadata.codeagent == {
        "run": 0,
        "kind": "tool",
        "step": 1,
        "tool_call_id": "c1",
        "tool": "run_cell",
        "status": "error",
        "duration_s": 0.01,
        "note": "",
    }
    assert fix.outputs[1].data["image/png"] == PNG  # images kept
    assert fix.outputs[0].text == "ok\n"
    assert cmd.source == "!ls -la" and cmd.metadata.codeagent["tool"] == "run_command"
    assert write.source == "%%writefile a.py\nx = 1\n" and write.outputs == []
    assert note.source.startswith("*read_file*(path=`missing.txt`) → error: file not found")
    assert answer.source == "y = 1/x is plotted above."
    assert len({c.id for c in nb.cells}) == len(nb.cells)

    meta = nb.metadata.codeagent
    assert nb.metadata.kernelspec.name == "python3"
    assert meta.format_version == ev.FORMAT_VERSION and meta.session_id == "sess-1"
    assert (meta.model, meta.base_url, meta.status) == ("m-1", "http://h/v1", "answered")
    assert meta.limits == {"memory_mb": 512} and meta.enforcement == {"memory": "rlimit"}
    assert meta.usage == {"prompt_tokens": 150, "completion_tokens": 25, "requests": 2}
    assert meta.timings.duration_s == 1.5 and meta.runs[0].steps == 6
    assert [len(t) for t in meta.transcript] == [6]
    assert meta.transcript[0][0]["tool_calls"][0]["id"] == "c1"
    assert "outputs" not in json.dumps(
        [
            e
            for e in meta.events
            if e["type"] == "tool_call_finished" and e.get("cell") in (fail.id, fix.id)
        ]
    )


def test_events_round_trip_through_the_notebook(tmp_path: Path):
    path = tmp_path / "s.ipynb"
    rec = NotebookRecorder(path)
    events = first_run()
    for event in events:
        rec.emit(event)
    expected = [e.to_dict() for e in events if e.type not in ("text_delta", "cell_output")]
    rebuilt = [e.to_dict() for e in decode_notebook(nbformat.read(path, as_version=4))]
    assert rebuilt == expected
    session = load_session(path)
    assert [e.to_dict() for e in session.events] == expected
    assert session.prompts == ["Plot y = 1/x"] and session.status == "answered"
    assert session.turns[0][-1] == {"role": "assistant", "content": "y = 1/x is plotted above."}
    assert session.model == "m-1" and session.usage["prompt_tokens"] == 150


def test_follow_up_continues_the_same_notebook(tmp_path: Path):
    path = tmp_path / "s.ipynb"
    first = NotebookRecorder(path)
    for event in first_run():
        first.emit(event)
    again = NotebookRecorder(path)
    assert again.session_id == first.session_id
    second = [
        ev.RunStarted(prompt="Now in red", run_index=1, model="m-1"),
        assistant(1, "Done in red."),
        ev.RunFinished(status=ev.MAX_STEPS, reason="stopped after 1 step", steps=1),
    ]
    for event in second:
        again.emit(event)
    session = load_session(path)
    assert session.prompts == ["Plot y = 1/x", "Now in red"]
    assert [len(t) for t in session.turns] == [6, 1]
    assert session.status == "max_steps" and session.reason == "stopped after 1 step"
    nb = read_valid(path)
    assert nb.cells[-3].source == "**Request:** Now in red"
    assert nb.cells[-1].source == "**Stopped (max_steps):** stopped after 1 step"
    assert [c.metadata.codeagent["run"] for c in nb.cells[-3:]] == [1, 1, 1]
    logged = [e for e in first_run() if e.type not in ("text_delta", "cell_output")]
    assert len(session.events) == len(logged) + len(second)


def test_decisions_are_recorded_on_cells(tmp_path: Path):
    path = tmp_path / "s.ipynb"
    rec = NotebookRecorder(path)
    bus = EventBus([rec.emit])
    for event in first_run():
        bus.deliver(event)
    code_cells = [c for c in rec.notebook.cells if c.cell_type == "code"]
    first = code_cells[0].metadata.codeagent["tool_call_id"]
    bus.publish(ev.CellDecision, cell_id="c2", accepted=True)
    bus.publish(ev.CellDecision, cell_id=first, accepted=False)
    bus.publish(ev.CellDecision, cell_id="c3", accepted=True)
    bus.publish(ev.CellDecision, cell_id="zz", accepted=True)  # no such cell: changes none
    nb = read_valid(path)
    accepted = [c.metadata.codeagent.get("accepted") for c in nb.cells if c.cell_type == "code"]
    assert accepted == [False, True, True, None]
    decisions = [e for e in load_session(path).events if e.type == "cell_decision"]
    assert [(d.cell_id, d.accepted) for d in decisions] == [
        ("c2", True),
        (first, False),
        ("c3", True),
        ("zz", True),
    ]
    assert [d.seq for d in decisions] == list(range(bus.next_seq - 4, bus.next_seq))


def test_no_key_or_token_reaches_the_file(tmp_path: Path):
    path = tmp_path / "s.ipynb"
    rec = NotebookRecorder(path)
    secrets = [
        "sk-proj-abcdefghijklmnop1234",
        "hf_abcdefghijklmnopqrstuvwx",
        "s3cr3t-value",
        "eyJhbGciOiJIUzI1NiJ9.payload",
        "pa55word",
    ]
    rec.emit(
        ev.RunStarted(
            prompt="hello",
            model="m",
            base_url="https://user:pa55word@api.example/v1?api_key=s3cr3t-value",
            config={
                "api_key": "anything-at-all",
                "headers": {"Authorization": "Bearer eyJhbGciOiJIUzI1NiJ9.payload"},
                "max_tokens": 1000,
                "token_budget": 5,
            },
        )
    )
    rec.emit(
        assistant(1, "The key is sk-proj-abcdefghijklmnop1234 and hf_abcdefghijklmnopqrstuvwx")
    )
    rec.emit(ev.RunFinished(status=ev.ANSWERED, answer="done"))
    text = path.read_text()
    for secret in [*secrets, "anything-at-all"]:
        assert secret not in text
    meta = read_valid(path).metadata.codeagent
    assert meta.config["max_tokens"] == 1000 and meta.config["token_budget"] == 5  # numbers kept
    assert meta.base_url == "https://[redacted]@api.example/v1?api_key=***"


def test_outputs_are_capped_and_invalid_ones_replaced(tmp_path: Path):
    path = tmp_path / "s.ipynb"
    rec = NotebookRecorder(path)
    huge = "x" * (OUTPUT_CAP + 500_000)
    rec.emit(ev.RunStarted(prompt="p"))
    for event in tool(
        1,
        "c1",
        "run_cell",
        {"code": "big()"},
        code="big()",
        outputs=[
            {"output_type": "stream", "name": "stdout", "text": huge},
            {"output_type": "bogus"},
        ],
    ):
        rec.emit(event)
    cell = read_valid(path).cells[-1]
    assert len(cell.outputs[0].text) < OUTPUT_CAP and "cut in the recording" in cell.outputs[0].text
    assert (
        cell.outputs[-1].name == "stderr" and "not kept in the recording" in cell.outputs[-1].text
    )
    assert path.stat().st_size < OUTPUT_CAP + 100_000


def test_denied_and_malformed_calls_become_notes(tmp_path: Path):
    path = tmp_path / "s.ipynb"
    rec = NotebookRecorder(path)
    rec.emit(ev.RunStarted(prompt="p"))
    for event in tool(
        1,
        "c1",
        "run_cell",
        {"code": "import os"},
        status="denied",
        result="the user denied this call",
    ):
        rec.emit(event)
    rec.emit(
        ev.ToolCallFinished(
            step=2, tool_call_id="c2", name="nope", status="error", result="unknown tool 'nope'"
        )
    )
    refused = {"path": "../x.py", "content": "x"}
    for event in tool(
        3, "c3", "write_file", refused, status="error", result="leaves the workspace"
    ):
        rec.emit(event)
    cells = read_valid(path).cells
    assert [c.cell_type for c in cells] == ["markdown"] * 4  # nothing here ran: no code cells
    assert cells[1].source == "*run_cell*(code=`import os`) → denied: the user denied this call"
    assert cells[2].source == "*nope*() → error: unknown tool 'nope'"
    assert cells[3].source.startswith("*write_file*(path=`../x.py`, content=`x`) → error: leaves")


def test_other_notebooks_are_not_overwritten(tmp_path: Path):
    path = tmp_path / "mine.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]), path)
    before = path.read_text()
    with pytest.raises(ConfigError, match="is not a codeagent session notebook"):
        NotebookRecorder(path)
    with pytest.raises(ConfigError, match="is not a codeagent session notebook"):
        load_session(path)
    (tmp_path / "broken.ipynb").write_text("{not json")
    with pytest.raises(ConfigError, match="is not a readable notebook"):
        load_session(tmp_path / "broken.ipynb")
    assert path.read_text() == before


def test_killed_writer_leaves_a_valid_notebook(tmp_path: Path):
    path = tmp_path / "s.ipynb"
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from codeagent_jupyter import events as ev
        from codeagent_jupyter.record.recorder import NotebookRecorder
        rec = NotebookRecorder(Path({str(path)!r}))
        rec.emit(ev.RunStarted(prompt="p"))
        for i in range(1, 10_000):
            out = {{"output_type": "stream", "name": "stdout", "text": "y" * 200_000}}
            rec.emit(ev.ToolCallFinished(step=i, tool_call_id=f"c{{i}}", name="run_cell",
                                         code=f"print({{i}})", outputs=[out]))
            if i == 5:
                print("ready", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    proc.kill()  # SIGKILL, somewhere in the middle of writing
    proc.wait()
    nb = read_valid(path)
    assert len(nb.cells) >= 6
    assert [c.source for c in nb.cells[1:6]] == [f"print({i})" for i in range(1, 6)]
    (tmp_path / ".s.ipynb.abc123.tmp").write_text("{half a notebo")  # as a kill mid-save leaves
    rec = NotebookRecorder(path)  # reopening continues the session and clears stale temp files
    rec.emit(ev.RunStarted(prompt="after the crash", run_index=1))
    assert [p.name for p in tmp_path.iterdir()] == ["s.ipynb"]
    assert load_session(path).prompts == ["p", "after the crash"]


def test_shell_and_file_cells_re_execute_as_written(tmp_path: Path):
    path = tmp_path / "s.ipynb"
    rec = NotebookRecorder(path)
    rec.emit(ev.RunStarted(prompt="p"))
    calls = [
        ("run_command", {"command": "awk '{print $1}' data.txt"}),
        ("run_command", {"command": "cd sub\nmake"}),
        ("write_file", {"path": "my notes.md", "content": "# hi\n"}),
    ]
    for i, (name, args) in enumerate(calls):
        for event in tool(i, f"c{i}", name, args, code=args.get("command")):
            rec.emit(event)
    sources = [c.source for c in read_valid(path).cells[1:]]
    assert sources == [
        "%%bash\nawk '{print $1}' data.txt",
        "%%bash\ncd sub\nmake",
        "%%writefile 'my notes.md'\n# hi\n",
    ]


async def test_deferred_saves_merge_a_burst_and_end_a_run_at_once(tmp_path: Path):
    """``save_delay`` (an MCP session's notebook): the steps of a burst are saved once,
    after it; the end of the run is saved at once."""
    import asyncio

    path = tmp_path / "s.ipynb"
    saves: list[str] = []
    recorder = NotebookRecorder(path, on_saved=lambda p, text: saves.append(text), save_delay=0.2)
    bus = EventBus([recorder.emit])
    bus.deliver(first_run()[0])  # RunStarted: saved at once (a completed event)
    saved_before = len(saves)
    for i in range(5):
        for event in tool(i + 1, f"c{i}", "run_cell", {"code": f"{i}"}, status="ok", code=f"{i}"):
            bus.deliver(event)
    assert len(saves) == saved_before  # nothing written on the calls' own path
    for _ in range(100):
        if len(saves) > saved_before:
            break
        await asyncio.sleep(0.05)
    assert len(saves) == saved_before + 1  # the five calls, one save
    assert [c.source for c in read_valid(path).cells if c.cell_type == "code"] == [
        "0", "1", "2", "3", "4"
    ]  # fmt: skip
    bus.deliver(tool(6, "c6", "run_cell", {"code": "6"}, status="ok", code="6")[-1])
    bus.deliver(ev.RunFinished(status=ev.ANSWERED, reason="", answer="done", steps=6))
    assert len(saves) == saved_before + 2  # the end of the run: at once, with what was pending
    assert read_valid(path).metadata["codeagent"]["runs"][0]["status"] == ev.ANSWERED
