"""``build_agent`` takes everything a session is made of: the regressions of a loop that was
once patched after it was built (history and run index of a resume, hooks for helpers, the
``delegate`` call's own id)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codeagent_jupyter import events as ev
from codeagent_jupyter.config import AgentConfig, SandboxLimits
from codeagent_jupyter.core.assembly import build_agent
from codeagent_jupyter.core.bus import EventBus
from codeagent_jupyter.core.toolset import ToolContext
from codeagent_jupyter.hooks import Deny, HookChain
from codeagent_jupyter.models.openai_chat import OpenAIChatModel
from codeagent_jupyter.record.helper_notebooks import helper_recorders
from codeagent_jupyter.record.snapshots import SnapshotStore
from codeagent_jupyter.sandbox import Sandbox
from codeagent_jupyter.tools import HelperSettings, HelperTool, ToolBox
from tests.scripted_model import text, tool_calls

HELPER_TASK = "write the notes"


class Collect:
    def __init__(self) -> None:
        self.events: list[ev.Event] = []

    def emit(self, event: ev.Event) -> None:
        self.events.append(event)

    def of(self, kind: type[ev.Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]


def model(srv: Any) -> OpenAIChatModel:
    return OpenAIChatModel("scripted", srv.url, "test-key", backoff=0.01)


def helper_tool(srv: Any, ws: Path, notebooks: Path) -> HelperTool:
    def sandbox(path: Path) -> Sandbox:  # a real kernel for each helper
        return Sandbox(workdir=path, limits=SandboxLimits(memory_mb=1024, cell_timeout=30))

    return HelperTool(
        model(srv),
        ws,
        sandbox,
        SnapshotStore.for_workspace(ws),
        helper_recorders(notebooks),
        HelperSettings(max_per_call=1, max_total=2),
        session="parent",
    )


def respond(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The parent delegates one task, then answers; the helper writes a file, then answers."""
    first = next(m["content"] for m in messages if m["role"] == "user")
    answered = sum(m["role"] == "assistant" for m in messages)
    if first.endswith(HELPER_TASK):
        if answered == 0:
            return tool_calls(("write_file", {"path": "notes.txt", "content": "by the helper"}))
        return text("helper done")
    if answered == 0:
        return tool_calls(("delegate", {"tasks": [HELPER_TASK]}))
    return text("parent done")


async def test_a_resumed_session_keeps_its_history_and_run_index(scripted_model, tmp_path):
    history = [
        {"role": "user", "content": "## Context\nfiles\n\n## Request\nfirst"},
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "[The session was restored from the end]"},
    ]
    scripted_model.set_script([text("second answer"), text("third answer")])
    sink = Collect()
    loop = build_agent(
        model(scripted_model),
        None,
        [sink],
        tools=ToolBox(None, tmp_path),
        context="## Context\nnot again",
        history=history,
        run_index=2,
    )
    assert (await loop.run("next")).answer == "second answer"
    await loop.run("and then")
    sent = scripted_model.requests[0]["messages"]
    assert sent[0]["role"] == "system"
    asked = {"role": "user", "content": "[budget left: 30 of 30 steps, 30 min, 2M tokens]\n\nnext"}
    assert sent[1:] == [*history, asked]  # no second context
    assert [e.run_index for e in sink.of(ev.RunStarted)] == [2, 3]
    last = scripted_model.requests[1]["messages"][-1]
    assert last["role"] == "user" and last["content"].startswith("[budget left: ")
    assert last["content"].endswith("]\n\nand then")


class NoWrites:
    """A tool hook that denies every ``write_file``, and notes each call it sees."""

    name = "no-writes"

    def __init__(self) -> None:
        self.seen: list[str] = []

    def before_tool(self, call: Any) -> Any:
        self.seen.append(call.name)
        return Deny("read-only session") if call.name == "write_file" else None


async def test_hooks_reach_the_helpers(scripted_model, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    scripted_model.set_script(respond)
    hook = NoWrites()
    sink = Collect()
    tools = [ToolBox(None, ws), helper_tool(scripted_model, ws, tmp_path / "helpers")]
    loop = build_agent(
        model(scripted_model), None, [sink], tools=tools, hooks=HookChain([hook], session_id="p")
    )
    assert (await loop.run("split it")).answer == "parent done"
    assert hook.seen == ["delegate", "write_file"]  # the parent's call, then the helper's
    inner = [e.inner() for e in sink.of(ev.HelperEvent)]
    (written,) = [e for e in inner if isinstance(e, ev.ToolCallFinished)]
    assert written.name == "write_file" and written.status == "denied"
    assert "read-only session" in written.result
    assert not list(ws.rglob("notes.txt"))  # neither in the helper's copy nor brought back


async def test_delegate_gets_its_own_call_id_from_its_context(scripted_model, tmp_path):
    """No ``tool_call_started`` on the bus: the call's id comes with the call, as does the
    run's budget, and the helper's tokens are charged through the context."""
    ws = tmp_path / "ws"
    ws.mkdir()
    scripted_model.set_script(respond)
    bus = EventBus()
    charged: list[Any] = []
    ctx = ToolContext(
        step=4,
        tool_call_id="call-own",
        config=AgentConfig(max_steps=9),
        steps_taken=4,
        publish=bus.publish,
        charge=charged.append,
    )
    tool = helper_tool(scripted_model, ws, tmp_path / "helpers")
    outcome = await tool.call("delegate", {"tasks": [HELPER_TASK]}, ctx)
    assert outcome.status == "ok", outcome.text
    helper_events = [e for e in bus.events if isinstance(e, ev.HelperEvent)]
    assert helper_events and {e.parent_tool_call_id for e in helper_events} == {"call-own"}
    assert {e.child for e in helper_events} == {"1-1"}
    assert '"max_steps": 2' in outcome.text  # (9 - 4) // 2 steps: the parent keeps a share
    assert [u.total for u in charged] == [helper_events[-1].inner().usage["total_tokens"]]
    assert (tmp_path / "helpers" / "helper-1-1.ipynb").is_file()
    assert (ws / "delegates" / "1-1" / "notes.txt").read_text() == "by the helper"
