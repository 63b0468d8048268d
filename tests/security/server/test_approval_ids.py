"""Approvals are never keyed by the model's tool call ids.

The attack, through the server's REST and WebSocket routes with the scripted model: a
``run_command`` asks under the id ``call_dup`` and the user denies it; the model then sends
a ``run_cell`` reusing ``call_dup`` and the user, seeing a harmless cell, approves it with
"allow for this session". Before, the remembered tool came from the first approval under
that id, so the session then allowed ``run_command``: the next command ran unasked. Now the
reused id is refused before anything about the call runs (no approval, no hook, no tool),
the model gets one tool message saying so, and "allow for this session" binds to the
waiting call's own tool as the server recorded it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.timeline.fold import fold
from codeagent_jupyter.timeline.state import ToolItem
from tests.scripted_model import text
from tests.server.helpers import Api, of_type

ASK = {"run_cell": "ask", "run_command": "ask"}


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One assistant turn with one tool call under the id the model chose."""
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"type": "message", "message": message}


async def _answer_every_approval(
    api: Api, sid: str, decide: Any, decided: list[tuple[str, int]]
) -> list[dict[str, Any]]:
    """Follow the run to its end, answering each approval with ``decide(event) -> body``
    (``decided``: each call id answered, with the HTTP status of the answer)."""
    ws = await api.connect(sid)
    events: list[dict[str, Any]] = []
    try:
        while True:
            await api.read_until(
                ws, lambda e: e["type"] in ("approval_requested", "run_finished"), into=events
            )
            if events[-1]["type"] == "run_finished":
                return events
            asked = events[-1]
            path = f"sessions/{sid}/approvals/{asked['tool_call_id']}"
            code, reply = await api.call("POST", path, decide(asked))
            # 409: a tool allowed for the session was approved without the user
            assert code in (200, 409), f"{path}: {code} {reply}"
            decided.append((asked["tool_call_id"], code))
    finally:
        ws.close()


@pytest.mark.codeagent(approval=ASK, allow_unconfined=True)  # about approvals, not isolation
async def test_a_reused_call_id_never_carries_an_approval_to_another_tool(
    api: Api, scripted_model: Any, jp_root_dir: Path
) -> None:
    scripted_model.set_script(
        [
            _call("call_dup", "run_command", {"command": "echo one > first-command.txt"}),
            _call("call_dup", "run_cell", {"code": "open('cell.txt', 'w').write('x')"}),
            _call("call_next", "run_command", {"command": "echo two > second-command.txt"}),
            text("done"),
        ]
    )
    sid = (await api.start("tidy up"))["id"]

    def decide(asked: dict[str, Any]) -> dict[str, Any]:
        if asked["name"] == "run_cell":  # the harmless-looking cell: "allow for this session"
            return {"approve": True, "remember": "session"}
        return {"approve": False}  # every command is denied

    decided: list[tuple[str, int]] = []
    events = await _answer_every_approval(api, sid, decide, decided)

    assert events[-1]["status"] == "answered"
    for name in ("first-command.txt", "cell.txt", "second-command.txt"):
        assert not (jp_root_dir / name).exists(), f"{name} was written"
    assert decided == [("call_dup", 200), ("call_next", 200)], "the user answered both commands"
    asked = [(e["tool_call_id"], e["name"]) for e in of_type(events, "approval_requested")]
    assert asked == [("call_dup", "run_command"), ("call_next", "run_command")], asked
    finished = [
        (e["tool_call_id"], e["name"], e["status"]) for e in of_type(events, "tool_call_finished")
    ]
    assert finished == [
        ("call_dup", "run_command", "denied"),
        ("call_dup", "run_cell", "refused"),
        ("call_next", "run_command", "denied"),
    ]
    refusal = of_type(events, "tool_call_finished")[1]["result"]
    assert "already used" in refusal and "call_dup" in refusal
    assert not of_type(events, "tool_call_started"), "nothing may run"
    summary = await api.ok("GET", f"sessions/{sid}")
    assert summary["allowed_tools"] == []

    # Every tool call got exactly one tool message, the duplicate's saying why.
    last = scripted_model.requests[-1]["messages"]
    tools = [(m["tool_call_id"], m["content"]) for m in last if m["role"] == "tool"]
    assert [t[0] for t in tools] == ["call_dup", "call_dup", "call_next"]
    assert "already used in this session" in tools[1][1]

    assert summary["pending_approvals"] == []

    # What the panel draws from those events keeps the denied command and the refused cell
    # apart: the refusal never overwrites the command's line, and the id names the command.
    view = fold(ev.Event.from_dict(e) for e in (await api.ok("GET", f"sessions/{sid}"))["events"])
    lines = [(i.name, i.status) for i in view.items if isinstance(i, ToolItem)]
    assert lines == [("run_command", "denied"), ("run_cell", "refused"), ("run_command", "denied")]
    owner = view.tool_call("call_dup")
    assert owner is not None and owner.name == "run_command"


@pytest.mark.codeagent(approval=ASK, allow_unconfined=True)
async def test_allow_for_this_session_allows_only_the_approved_calls_own_tool(
    api: Api, scripted_model: Any, jp_root_dir: Path
) -> None:
    scripted_model.set_script(
        [
            _call("call_a", "run_cell", {"code": "open('cell.txt', 'w').write('x')"}),
            _call("call_b", "run_cell", {"code": "open('cell2.txt', 'w').write('y')"}),
            _call("call_c", "run_command", {"command": "echo no > command.txt"}),
            text("done"),
        ]
    )
    sid = (await api.start("two cells and a command"))["id"]

    def decide(asked: dict[str, Any]) -> dict[str, Any]:
        if asked["name"] == "run_cell":
            return {"approve": True, "remember": "session"}
        return {"approve": False}

    decided: list[tuple[str, int]] = []
    events = await _answer_every_approval(api, sid, decide, decided)

    # The second cell was approved by the session's allowance (the user's answer came too
    # late: 409); the command was asked and the user's denial stood.
    assert decided == [("call_a", 200), ("call_b", 409), ("call_c", 200)]
    auto = [e for e in of_type(events, "approval_decided") if e["tool_call_id"] == "call_b"]
    assert auto[0]["approved"] is True and auto[0]["remember"] == "session"
    statuses = {e["tool_call_id"]: e["status"] for e in of_type(events, "tool_call_finished")}
    assert statuses == {"call_a": "ok", "call_b": "ok", "call_c": "denied"}
    assert (jp_root_dir / "cell2.txt").exists() and not (jp_root_dir / "command.txt").exists()
    assert (await api.ok("GET", f"sessions/{sid}"))["allowed_tools"] == ["run_cell"]


@pytest.mark.codeagent(approval=ASK, allow_unconfined=True)
async def test_an_id_used_before_a_pause_is_refused_after_the_resume(
    api: Api, scripted_model: Any, jp_root_dir: Path
) -> None:
    scripted_model.set_script(
        [_call("call_r", "run_cell", {"code": "open('before.txt', 'w').close()"}), text("ok")]
    )
    sid = (await api.start("one cell"))["id"]
    decided: list[tuple[str, int]] = []
    await _answer_every_approval(api, sid, lambda asked: {"approve": True}, decided)
    assert decided == [("call_r", 200)] and (jp_root_dir / "before.txt").exists()
    paused = await api.ok("POST", f"sessions/{sid}/pause")
    assert paused["state"] == "closed"

    # The resumed session continues the conversation: call_r is taken.
    scripted_model.set_script(
        [_call("call_r", "run_cell", {"code": "open('after.txt', 'w').close()"}), text("ok")]
    )
    await api.ok("POST", f"sessions/{sid}/messages", {"text": "once more"}, 202)
    ws = await api.connect(sid, paused["next_seq"])
    try:
        events = await api.read_until(
            ws, lambda e: e["type"] in ("approval_requested", "run_finished"), timeout=120
        )
    finally:
        ws.close()
    assert events[-1]["type"] == "run_finished", "no approval may be asked for a reused id"
    assert events[-1]["status"] == "answered"
    refused = of_type(events, "tool_call_finished")
    assert [(e["tool_call_id"], e["status"]) for e in refused] == [("call_r", "refused")]
    assert not (jp_root_dir / "after.txt").exists()
