"""A tool call id is claimed once per session, by the loop itself, whatever edge runs it.

The server's attack (``server/test_approval_ids.py``) relies on the loop refusing a reused
id before anything about the call runs. Here the same loop runs with the scripted model
through the real ``openai`` client, its own approver asked for ``write_file``: a second call
under an id used earlier in the same message, or before a resume (the conversation the
loop continues), is refused — no approval asked, no file written — and still answered with
exactly one tool message (the scripted server rejects a request where a call has none).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codeagent_jupyter import events as ev
from codeagent_jupyter.config import AgentConfig
from codeagent_jupyter.core.loop import AgentLoop
from codeagent_jupyter.models.openai_chat import OpenAIChatModel
from codeagent_jupyter.tools import ToolBox
from tests.scripted_model import text


def _call(call_id: str, path: str) -> dict[str, Any]:
    arguments = json.dumps({"path": path, "content": "written"})
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "write_file", "arguments": arguments},
    }


def _turn(*calls: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "message": {"role": "assistant", "content": None, "tool_calls": list(calls)},
    }


class Asked:
    """The loop's approver (an input of the loop): approves, and keeps what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.events: list[ev.Event] = []

    async def approve(self, call_id: str, name: str, arguments: Any) -> tuple[bool, str]:
        self.calls.append((call_id, arguments.get("path")))
        return True, "session"

    def emit(self, event: ev.Event) -> None:
        self.events.append(event)


def _loop(
    scripted_model: Any, workdir: Path, asked: Asked, history: list[dict[str, Any]]
) -> AgentLoop:
    model = OpenAIChatModel("scripted", scripted_model.url, "test-key", backoff=0.01)
    return AgentLoop(
        model,
        None,
        ToolBox(None, workdir),
        [asked],
        AgentConfig(approval={"write_file": "ask"}),
        approver=asked.approve,
        history=history,
    )


def _tool_messages(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["tool_call_id"], m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def test_an_id_reused_in_the_same_message_is_refused(
    scripted_model: Any, tmp_path: Path
) -> None:
    scripted_model.set_script(
        [_turn(_call("call_x", "first.txt"), _call("call_x", "second.txt")), text("ok")]
    )
    asked = Asked()
    finished = await _loop(scripted_model, tmp_path, asked, []).run("write two files")

    assert finished.status == ev.ANSWERED, finished.reason
    assert asked.calls == [("call_x", "first.txt")]
    assert (tmp_path / "first.txt").exists() and not (tmp_path / "second.txt").exists()
    answers = _tool_messages(scripted_model.requests[-1])
    assert [a[0] for a in answers] == ["call_x", "call_x"]
    assert "already used in this session" in answers[1][1]
    statuses = [
        (e.tool_call_id, e.status) for e in asked.events if isinstance(e, ev.ToolCallFinished)
    ]
    assert statuses == [("call_x", "ok"), ("call_x", "refused")]


async def test_an_id_used_before_a_resume_is_refused_after_it(
    scripted_model: Any, tmp_path: Path
) -> None:
    history = [
        {"role": "user", "content": "earlier request"},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_old", "old.txt")]},
        {"role": "tool", "tool_call_id": "call_old", "content": "Wrote old.txt"},
        {"role": "assistant", "content": "done"},
    ]
    scripted_model.set_script([_turn(_call("call_old", "again.txt")), text("ok")])
    asked = Asked()
    finished = await _loop(scripted_model, tmp_path, asked, history).run("carry on")

    assert finished.status == ev.ANSWERED, finished.reason
    assert asked.calls == [], "no approval is asked for a reused id"
    assert not (tmp_path / "again.txt").exists()
    answers = _tool_messages(scripted_model.requests[-1])
    assert answers[-1][0] == "call_old" and "already used" in answers[-1][1]
    assert not any(isinstance(e, ev.ToolCallStarted) for e in asked.events)
