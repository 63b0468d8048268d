"""``edit_cell`` over the real server: the model proposes a new source for one of the user's
notebook cells (ids from the notebook context); the proposal travels as an event, the panel
draws it as a sanitized diff, and Accept is recorded like any cell decision."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat

from codeagent_jupyter.events import Event
from codeagent_jupyter.timeline.fold import fold
from codeagent_jupyter.widget import render
from codeagent_jupyter.widget.client import AgentClient
from tests.scripted_model import text, tool_calls

OLD = "total = sum(prices\nprint(total)"
NEW = "total = sum(prices)\nprint(total)"


def _notebook(root: Path) -> str:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("prices = [1, 2, 3]", id="load-prices"),
        nbformat.v4.new_code_cell(OLD, id="broken-sum"),
    ]
    nbformat.write(nb, root / "work.ipynb")
    return "work.ipynb"


async def _finished(client: AgentClient, sid: str) -> list[dict[str, Any]]:
    async for event in client.events(sid):
        if event.type == "run_finished":
            break
    return (await client.session(sid))["events"]


def test_edit_cell_proposal_reaches_the_panel_and_is_decided(
    run: Any, client: AgentClient, scripted_model: Any, jp_root_dir: Path
) -> None:
    path = _notebook(jp_root_dir)
    reason = "Close the parenthesis <script>alert(1)</script>"
    scripted_model.set_script(
        [
            tool_calls(
                ("edit_cell", {"cell_id": "nope", "new_source": NEW, "reason": "x"}),
                ("edit_cell", {"cell_id": "broken-sum", "new_source": NEW, "reason": reason}),
            ),
            text("Fixed the missing parenthesis."),
        ]
    )

    async def scenario() -> list[dict[str, Any]]:
        started = await client.start("fix my sum", notebook_path=path)
        events = await _finished(client, started["id"])
        finished = [e for e in events if e["type"] == "tool_call_finished"]
        assert finished[0]["status"] == "refused" and "no code cell 'nope'" in finished[0]["result"]
        tcid = finished[1]["tool_call_id"]
        await client.decide(started["id"], tcid, True)
        nb = await client.request("GET", f"/sessions/{started['id']}/notebook")
        marks = [c["metadata"].get("codeagent", {}) for c in nb["cells"]]
        assert [m.get("accepted") for m in marks if m.get("tool_call_id") == tcid] == [True]
        return (await client.session(started["id"]))["events"]

    events = run(scenario())
    first = scripted_model.requests[0]
    assert "id=broken-sum" in json.dumps(first["messages"])
    assert "edit_cell" in [t["function"]["name"] for t in first["tools"]]

    edit = [e for e in events if e["type"] == "tool_call_finished"][1]["edit"]
    assert edit["cell_id"] == "broken-sum" and edit["old_source"] == OLD
    assert "-total = sum(prices" in edit["diff"] and "+total = sum(prices)" in edit["diff"]
    assert [e["accepted"] for e in events if e["type"] == "cell_decision"] == [True]

    state = fold(Event.from_dict(e) for e in events)
    (cell,) = [c for c in state.cells if c.edit]
    assert cell.code == NEW and cell.decision is True and cell.notebook_source == NEW
    html = render.cell_html(cell)
    assert "codeagent-diff" in html and "+total = sum(prices)" in html
    assert "<script>" not in html and "alert(1)" in html  # the reason is text, not markup


def test_no_notebook_no_edit_cell_tool(run: Any, client: AgentClient, scripted_model: Any) -> None:
    scripted_model.set_script([text("hi")])

    async def scenario() -> None:
        started = await client.start("hello")
        await _finished(client, started["id"])

    run(scenario())
    names = [t["function"]["name"] for t in scripted_model.requests[0]["tools"]]
    assert "edit_cell" not in names and "run_cell" in names
