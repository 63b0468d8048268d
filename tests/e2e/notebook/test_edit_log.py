"""An ``edit_cell`` proposal survives the session notebook: recorded, decoded, folded back
into the same item (a session restored after a restart still shows and decides it)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from codeagent_jupyter import events as ev
from codeagent_jupyter.core.bus import EventBus
from codeagent_jupyter.record.eventlog import decode_notebook
from codeagent_jupyter.record.recorder import NotebookRecorder
from codeagent_jupyter.timeline.fold import fold
from codeagent_jupyter.tools.edit_cell import propose


def test_an_edit_round_trips_through_the_session_notebook(tmp_path: Path) -> None:
    cells = {"c-1": "x = 1\nprint(x + y)"}
    outcome = propose(cells, "c-1", "x = 1\nprint(x)", "y is undefined")
    args = {"cell_id": "c-1", "new_source": "x = 1\nprint(x)", "reason": "y is undefined"}
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "t1",
                "type": "function",
                "function": {"name": "edit_cell", "arguments": json.dumps(args)},
            }
        ],
    }
    recorder = NotebookRecorder(tmp_path / "s.ipynb")
    bus = EventBus([recorder.emit])
    published = [
        bus.publish(ev.RunStarted, prompt="fix it"),
        bus.publish(ev.AssistantMessage, step=1, message=message),
        bus.publish(
            ev.ToolCallStarted, step=1, tool_call_id="t1", name="edit_cell", arguments=args
        ),
        bus.deliver(
            ev.ToolCallFinished.from_outcome(outcome, step=1, tool_call_id="t1", name="edit_cell")
        ),
        bus.publish(ev.RunFinished, status=ev.ANSWERED, answer="done", steps=1),
        bus.publish(ev.CellDecision, cell_id="t1", accepted=False),
    ]
    decoded = decode_notebook(nbformat.read(tmp_path / "s.ipynb", as_version=4))
    finished = [e for e in decoded if isinstance(e, ev.ToolCallFinished)]
    assert finished[0].edit == outcome.edit and finished[0].edit["old_source"] == cells["c-1"]
    assert fold(decoded).cells == fold(published).cells
    (cell,) = fold(decoded).cells
    assert cell.edit["cell_id"] == "c-1" and cell.decision is False and cell.ran
