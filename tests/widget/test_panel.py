"""The panel's widgets and buttons, driven as a user would (``Button.click()``), no browser.

Without a frontend there is no notebook to insert into, so Accept takes the documented
fallback (``%agent accept N``); the decision itself must still reach the server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from codeagent_jupyter.timeline.state import ApprovalItem, ToolItem
from codeagent_jupyter.widget.actions import Inserter
from codeagent_jupyter.widget.client import AgentClient
from codeagent_jupyter.widget.panel import AgentPanel
from codeagent_jupyter.widget.views import ApprovalView, CellView
from tests.scripted_model import text, tool_calls


async def until(condition: Callable[[], Any], timeout: float = 60.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.05)


def test_panel_start_accept_follow_up(run: Any, client: AgentClient, scripted_model: Any) -> None:
    run(_panel_start_accept_follow_up(client, scripted_model))


async def _panel_start_accept_follow_up(client: AgentClient, scripted_model: Any):
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": "x = 6 * 7\nprint(x)"})),
            tool_calls(("run_cell", {"code": "print(x + 1)"})),
            text("x is 42"),
        ]
    )
    panel = AgentPanel(client, inserter=Inserter(None, None))
    assert panel.controls.layout.display == "none"  # nothing to stop or accept yet

    panel.prompt.value = "c"  # typing warms a sandbox, once
    await until(lambda: "warm" not in panel._busy)
    health = await client.health()
    assert health["pool"]["warm_held"] == 1, health
    panel.prompt.value = "compute x"
    panel.send.click()
    await until(lambda: panel.session_id is not None and panel.state.status == "answered")

    assert panel.prompt.value == "" and panel.send.description == "Follow up"
    assert panel.stop.disabled and not panel.accept_all.disabled
    views = [v for v in panel._views.values() if isinstance(v, CellView)]
    assert [v.item.number for v in views] == [1, 2]
    assert all(v.buttons.layout.display == "" for v in views)
    assert "print" in views[0].html.value and "42\n</pre>" in views[0].html.value
    assert list(panel.timeline.children).count(views[0].widget) == 1
    assert 'data-status="answered"' in panel.status.value

    views[1].accept.click()
    await until(lambda: panel.state.cells[1].decision is True)
    assert views[1].accept.disabled and views[1].accept.description == "Accepted"
    assert "%agent accept 2" in panel.notice.value  # no labextension here: the fallback
    panel.accept_all.click()
    await until(lambda: panel.state.cells[0].decision is True)
    assert panel.accept_all.disabled
    detail = await client.session(panel.session_id)
    decisions = [e for e in detail["events"] if e["type"] == "cell_decision"]
    assert [(d["cell_id"], d["accepted"]) for d in decisions] == [
        (panel.state.cells[1].tool_call_id, True),
        (panel.state.cells[0].tool_call_id, True),
    ]

    scripted_model.set_script([tool_calls(("run_cell", {"code": "print(x * 2)"})), text("84")])
    panel.prompt.value = "double it"
    panel.send.click()
    assert panel.notice.value == ""  # what the last Accept did is not news any more
    await until(lambda: len(panel.state.cells) == 3 and panel.state.status == "answered")
    assert "84" in panel._views[panel.state.cells[2].key].html.value
    assert "%agent accept" not in panel.notice.value

    # A second panel attached to the same session shows the same thing.
    again = AgentPanel(client)
    again.attach(panel.session_id)
    await until(lambda: again.state.last_seq == panel.state.last_seq)
    assert again.state == panel.state
    panel.close()
    again.close()


@pytest.mark.agent_settings(approval={"run_cell": "ask"})
def test_panel_deny_approve_and_stop(run: Any, client: AgentClient, scripted_model: Any) -> None:
    run(_panel_deny_approve_and_stop(client, scripted_model))


async def _panel_deny_approve_and_stop(client: AgentClient, scripted_model: Any):
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": "import os; os.remove('precious.txt')"})),
            tool_calls(("run_cell", {"code": "while True: pass"})),
            text("unreachable"),
        ]
    )
    panel = AgentPanel(client, inserter=Inserter(None, None))
    panel.prompt.value = "tidy up"
    panel.send.click()
    await until(lambda: panel.state.pending_approvals)
    first = panel._views[panel.state.pending_approvals[0].key]
    assert isinstance(first, ApprovalView) and first.buttons.layout.display == ""
    assert "precious.txt" in first.html.value  # the input is shown before anything runs
    first.deny.click()

    await until(lambda: len(approvals(panel)) == 2 and panel.state.pending_approvals)
    assert first.buttons.layout.display == "none" and "denied" in first.html.value
    denied = next(i for i in panel.state.items if isinstance(i, ToolItem))
    assert denied.status == "denied" and "precious.txt" in str(denied.arguments)
    assert panel.state.cells == []  # nothing ran
    panel._views[panel.state.pending_approvals[0].key].approve.click()

    await until(lambda: panel.state.cells and panel.state.cells[0].status == "running")
    assert not panel.stop.disabled and panel.state.running
    assert panel.stop.layout.display == ""  # Stop shows while a run goes
    await asyncio.sleep(0.5)
    panel.stop.click()
    await until(lambda: panel.state.status == "cancelled")
    assert [a.approved for a in approvals(panel)] == [False, True]
    assert "stopped by the user" in panel.state.reason
    assert panel.state.cells[0].status != "running"
    assert 'data-status="cancelled"' in panel.status.value
    await until(lambda: "stopping" not in panel.notice.value)
    assert panel.stop.disabled and panel.stop.layout.display == "none"  # no faded Stop left
    panel.close()


def approvals(panel: AgentPanel) -> list[ApprovalItem]:
    return [i for i in panel.state.items if isinstance(i, ApprovalItem)]


@pytest.mark.agent_settings(approval={"run_cell": "ask"})
def test_allow_for_this_session(run: Any, client: AgentClient, scripted_model: Any) -> None:
    run(_allow_for_this_session(client, scripted_model))


async def _allow_for_this_session(client: AgentClient, scripted_model: Any):
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": "x = pd.Series([1, 2]).sum()"})),
            tool_calls(("run_cell", {"code": "print(x)"})),
            tool_calls(("run_cell", {"code": "print(x + 1)"})),
            text("done"),
        ]
    )
    panel = AgentPanel(client, inserter=Inserter(None, None))
    panel.prompt.value = "sum it"
    panel.send.click()
    await until(lambda: panel.state.pending_approvals)
    asked = panel.state.pending_approvals[0]
    # Announced at the top of the panel; the one set of buttons is the entry's own.
    assert panel.header.approval.layout.display == ""
    assert panel.header.approval.children == (panel.header.attention,)
    assert "Waiting for your approval" in panel.header.attention.value
    assert "run_cell" in panel.header.attention.value
    code, message = await _post(
        client, panel, asked.tool_call_id, {"approve": True, "remember": "forever"}
    )
    assert (code, message) == (400, "codeagent: field remember must be 'session' (400)")
    view = panel._views[asked.key]
    assert isinstance(view, ApprovalView)
    view.approve_session.click()

    await until(lambda: panel.state.status == "answered")
    assert [c.status for c in panel.state.cells] == ["ok", "ok", "ok"]  # asked once only
    assert panel.header.approval.layout.display == "none"
    decided = [i for i in panel.state.items if isinstance(i, ApprovalItem)]
    assert [(a.approved, a.remember) for a in decided] == [(True, "session")] * 3
    assert "allowed for this session" in panel._views[decided[1].key].html.value
    summary = await client.session(panel.session_id)
    assert summary["allowed_tools"] == ["run_cell"]
    events = [e for e in summary["events"] if e["type"] == "approval_decided"]
    assert [e["remember"] for e in events] == ["session"] * 3

    # What the sandbox preloaded reaches the panel, and accepted cells get its imports.
    assert "pandas as pd" in (panel.state.preloaded or ())
    assert panel.handoff(panel.state.cells[0]).startswith("import pandas as pd\n")
    panel.close()


async def _post(client: AgentClient, panel: AgentPanel, tcid: str, body: Any) -> tuple[int, str]:
    from codeagent_jupyter.widget.client import ClientError

    path = f"/sessions/{panel.session_id}/approvals/{tcid}"
    try:
        await client.request("POST", path, body)
    except ClientError as e:
        return e.status, str(e)
    return 200, ""


def test_a_follow_up_resumes_a_closed_session(
    run: Any, client: AgentClient, scripted_model: Any
) -> None:
    run(_follow_up_resumes(client, scripted_model))


async def _follow_up_resumes(client: AgentClient, scripted_model: Any):
    """What the session list's Resume leads to: a panel on a closed session, whose next
    message resumes it and whose events are followed again."""
    scripted_model.set_script([tool_calls(("run_cell", {"code": "y = 5"})), text("set")])
    started = await client.start("set y")
    sid = started["id"]
    panel = AgentPanel(client, inserter=Inserter(None, None))
    panel.attach(sid)
    await until(lambda: panel.state.status == "answered")
    await client.request("POST", f"/sessions/{sid}/pause")
    await until(lambda: panel._follow_task is not None and panel._follow_task.done())
    assert (await client.session(sid))["state"] == "closed"

    scripted_model.set_script([tool_calls(("run_cell", {"code": "print(y * 2)"})), text("10")])
    panel.prompt.value = "double y"
    panel.send.click()
    await until(lambda: len(panel.state.cells) == 2 and panel.state.status == "answered")
    assert "10" in panel._views[panel.state.cells[1].key].html.value  # y came back
    panel.close()
