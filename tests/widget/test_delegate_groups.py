"""A ``delegate`` call in the panel: each helper as a collapsible group under the call.

First the fold and the view on a hand-made stream (hostile text included), then the real
panel against a real server whose model delegates to two helpers in real sandboxes.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.timeline.fold import fold
from codeagent_jupyter.timeline.state import ToolItem
from codeagent_jupyter.widget.actions import Inserter
from codeagent_jupyter.widget.client import AgentClient
from codeagent_jupyter.widget.helpers_view import HelperView
from codeagent_jupyter.widget.make import make_view
from codeagent_jupyter.widget.panel import AgentPanel
from tests.tools.test_delegate_events import TASKS, responder
from tests.widget.test_panel import until

HOSTILE = "<img src=x onerror=alert(1)>"


def helper(child: str, task: str, event: ev.Event, seq: int) -> ev.ChildEvent:
    inner = ev.Event.from_dict({**event.to_dict(), "seq": seq})
    return ev.ChildEvent(parent_tool_call_id="d1", child=child, task=task, event=inner.to_dict())


def stream(last: int) -> list[ev.Event]:
    out = [{"output_type": "stream", "name": "stdout", "text": f"{HOSTILE} printed\n"}]
    per_helper = [
        ev.RunStarted(prompt="t"),
        ev.ToolCallStarted(step=1, tool_call_id="c1", name="run_cell", arguments={"code": "1"}),
        ev.CellOutput(tool_call_id="c1", output=out[0]),
        ev.ToolCallFinished(step=1, tool_call_id="c1", name="run_cell", code="1", outputs=out),
        ev.AssistantMessage(step=2, message={"role": "assistant", "content": "all **done**"}),
        ev.RunFinished(status=ev.ANSWERED, answer="all **done**", steps=2),
    ]
    events: list[ev.Event] = [
        ev.RunStarted(prompt="split"),
        ev.ToolCallStarted(step=1, tool_call_id="d1", name="delegate", arguments={"tasks": []}),
    ]
    for n, event in enumerate(per_helper[:last]):  # the second helper happens to start first
        events.append(helper("1-2", HOSTILE, event, n))
        events.append(helper("1-1", "plain task", event, n))
    return [ev.Event.from_dict({**e.to_dict(), "seq": i}) for i, e in enumerate(events)]


def test_helpers_fold_into_groups_under_the_call_and_update_in_place() -> None:
    early = fold(stream(2)).tool_call("d1")
    assert isinstance(early, ToolItem)
    assert [g.child for g in early.helpers] == ["1-1", "1-2"]
    assert early.helpers[0].state.running and early.helpers[0].state.cells[0].code == "1"
    view = make_view(early, panel=None)
    assert isinstance(view, HelperView)
    assert view.groups.titles == (
        "Helper 1-1: plain task · running",
        f"Helper 1-2: {HOSTILE} · running",
    )
    view.groups.selected_index = 1  # the user opens the second helper
    bodies = view.groups.children

    done = fold(stream(6)).tool_call("d1")
    view.update(done)
    assert view.groups.children == bodies  # the same widgets, updated in place
    assert view.groups.selected_index == 1
    assert view.groups.titles[0] == "Helper 1-1: plain task · answered"
    body = view.groups.children[1].value
    assert "printed" in body and "<strong>done</strong>" in body
    assert "<img" not in body  # the helper's output is data, not markup
    assert fold(stream(6)).status == "running"  # a helper's end is not the session's


def test_a_call_without_helpers_shows_no_groups() -> None:
    item = ToolItem("tool-d", "d", 1, "delegate", {"tasks": ["x"]}, starts_agents=True)
    view = make_view(item, panel=None)
    assert isinstance(view.widget, w.VBox) and view.groups.layout.display == "none"


@pytest.mark.agent_settings(delegate_max_per_call=2)
def test_the_panel_shows_each_helper_as_a_group(
    run: Any, client: AgentClient, scripted_model: Any
) -> None:
    run(_panel_groups(client, scripted_model))


async def _panel_groups(client: AgentClient, scripted_model: Any) -> None:
    scripted_model.set_script(responder)
    panel = AgentPanel(client, inserter=Inserter(None, None))
    panel.prompt.value = "split the work"
    panel.send.click()
    await until(lambda: panel.state.status == "answered", timeout=180)
    view = next(v for v in panel._views.values() if isinstance(v, HelperView))
    assert view.widget in panel.timeline.children
    assert view.groups.titles == tuple(
        f"Helper 1-{n}: {t} · answered" for n, t in ((1, TASKS[0]), (2, TASKS[1]))
    )
    for body, letter in zip(view.groups.children, "AB", strict=True):
        assert f"from helper {letter}" in body.value  # the helper's cell and its output
        assert f"helper {letter} done" in body.value  # and its answer
        assert "codeagent-accept" not in body.value
    assert len(panel.state.cells) == 0  # helpers' cells are not the session's to accept
