"""The panel's client and reducer against a real server session (scripted model, real sandbox).

The event streams here are the server's real output; the reducer must turn them into the
view the issue describes (plan, cells with tables / plots / tracebacks, the fix, status,
answer), and a replay from ``since=0`` must give the same view (``%agent --attach``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from codeagent_jupyter.events import Event
from codeagent_jupyter.timeline.fold import SessionState, fold, reduce
from codeagent_jupyter.timeline.state import FinishedItem, PromptItem, TextItem
from codeagent_jupyter.widget import render
from codeagent_jupyter.widget.client import AgentClient, ClientError
from tests.scripted_model import text, tool_calls
from tests.server.helpers import SECRET

TABLE = (
    "from IPython.display import HTML, display\n"
    "display(HTML('<table><tr><th>month</th><th>revenue</th></tr>"
    "<tr><td>Jan</td><td>10</td></tr></table>'))"
)
PLOT = (
    "import matplotlib\nmatplotlib.use('module://matplotlib_inline.backend_inline')\n"
    "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [10, 30, 20])\nplt.show()"
)
PLAN = [
    {"step": "Load the data", "status": "in_progress"},
    {"step": "Plot revenue", "status": "pending"},
]


async def collect(client: AgentClient, sid: str, since: int = 0, until: str = "run_finished"):
    """Events from ``since`` until (and including) the first of type ``until``."""
    events = []

    async def read() -> None:
        async for event in client.events(sid, since=since):
            events.append(event)
            if event.type == until:
                return

    await asyncio.wait_for(read(), 90)
    return events


@pytest.mark.agent_settings(stream=True, prices={"scripted": {"input": 2.0, "output": 8.0}})
def test_a_session_folds_into_the_panel_view(
    run: Any, client: AgentClient, scripted_model: Any
) -> None:
    run(_a_session_folds_into_the_panel_view(client, scripted_model))


async def _a_session_folds_into_the_panel_view(client: AgentClient, scripted_model: Any):
    scripted_model.set_script(
        [
            tool_calls(("update_plan", {"steps": PLAN}), content="First the data."),
            tool_calls(("run_cell", {"code": TABLE})),
            tool_calls(("run_cell", {"code": "revenue = 1 / 0"})),
            tool_calls(("run_cell", {"code": PLOT})),
            tool_calls(("update_plan", {"steps": [{**p, "status": "done"} for p in PLAN]})),
            text("Revenue peaks in **February**."),
        ]
    )
    summary = await client.start("plot monthly revenue")
    sid = summary["id"]
    events = await collect(client, sid)
    state = fold(events)

    assert [i.text for i in state.items if isinstance(i, PromptItem)] == ["plot monthly revenue"]
    deltas = [e for e in events if e.type == "text_delta"]
    assert deltas and "".join(d.text for d in deltas if d.step == 1) == "First the data."
    said = [i.text for i in state.items if isinstance(i, TextItem) and not i.is_answer]
    assert said == ["First the data."]  # streamed, then confirmed: shown once
    assert [p["status"] for p in state.plan] == ["done", "done"]
    assert [p["step"] for p in state.plan] == ["Load the data", "Plot revenue"]
    table, failed, fixed = state.cells
    assert [c.number for c in state.cells] == [1, 2, 3]
    assert "<table>" in render.cell_html(table)
    assert failed.status == "error" and failed.fixes is None
    failed_html = render.cell_html(failed)
    assert "codeagent-traceback" in failed_html and "ZeroDivisionError" in failed_html
    assert "\x1b[" not in failed_html  # ANSI colour codes stripped
    assert fixed.status == "ok" and fixed.fixes == 2  # the fix that followed the error
    assert 'class="codeagent-plot"' in render.cell_html(fixed)
    assert "data:image/png;base64," in render.cell_html(fixed)
    answer = [i for i in state.items if isinstance(i, TextItem) and i.is_answer]
    assert [a.text for a in answer] == ["Revenue peaks in **February**."]
    assert "<strong>February</strong>" in render.markdown_html(answer[0].text)
    assert isinstance(state.items[-1], FinishedItem) and state.items[-1].answer is None
    assert state.status == "answered" and not state.running
    assert state.step == 6 and state.prompt_tokens > 0 and state.completion_tokens > 0
    status = render.status_html(state, now=0.0)
    assert "step 6" in status and "tokens" in status and 'data-status="answered"' in status
    cost = (state.prompt_tokens * 2.0 + state.completion_tokens * 8.0) / 1e6
    assert state.cost == pytest.approx(cost) and f"${cost:,.4f}" in status
    assert SECRET not in repr(events)

    # Pure: folding step by step equals folding at once; seen events change nothing.
    stepwise = SessionState()
    for event in events:
        before = stepwise
        stepwise = reduce(stepwise, event)
        assert reduce(stepwise, event) is stepwise
        assert before != stepwise
    assert stepwise == state
    # Re-attaching (replay from 0 over a new socket, or the REST detail) gives the same view.
    assert fold(await collect(client, sid)) == state
    assert fold(Event.from_dict(e) for e in (await client.session(sid))["events"]) == state

    # Accept / Reject are recorded by the server and come back as events.
    await client.decide(sid, table.tool_call_id, True)
    await client.decide(sid, failed.tool_call_id, False)
    later = await collect(client, sid, since=state.last_seq + 1, until="cell_decision")
    later += await collect(client, sid, since=later[-1].seq + 1, until="cell_decision")
    decided = fold(later, state)
    assert [c.decision for c in decided.cells] == [True, False, None]
    assert "accepted" in render.cell_header(decided.cells[0])
    with pytest.raises(ClientError) as err:
        await client.decide(sid, "call_nope", True)
    assert err.value.status == 404 and "call_nope" in str(err.value)

    # A follow-up continues the same session (and kernel): numbering and steps carry on.
    scripted_model.set_script(
        [tool_calls(("run_cell", {"code": "print(2 * 21)"})), text("It printed 42.")]
    )
    await client.follow_up(sid, "print 42")
    more = await collect(client, sid, since=decided.last_seq + 1)
    after = fold(more, decided)
    prompts = [i for i in after.items if isinstance(i, PromptItem)]
    assert [(p.text, p.run_index) for p in prompts][-1] == ("print 42", 1)
    assert after.cells[-1].number == 4 and after.cells[-1].step == 1
    assert "42" in render.cell_html(after.cells[-1])
    assert after.status == "answered" and after.step == 2
    answers = [i.text for i in after.items if isinstance(i, TextItem) and i.is_answer]
    assert answers == ["Revenue peaks in **February**.", "It printed 42."]
