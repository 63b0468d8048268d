"""The tool runner: every way one tool call can go is one outcome the model is shown, each
call is told which step and call it serves, and hooks and approval sit around it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from codeagent_jupyter import events as ev
from codeagent_jupyter.core.bus import EventBus
from codeagent_jupyter.core.outcome import ToolOutcome
from codeagent_jupyter.core.runner import ToolRunner
from codeagent_jupyter.core.stopping import StopSignal
from codeagent_jupyter.core.toolset import CombinedToolset, ToolContext
from codeagent_jupyter.hooks import Deny, HookChain, Modify
from codeagent_jupyter.tools import ToolBox


class Probe:
    """A toolset of one tool, ``probe``, that answers with what its context said and sends
    one live output; ``boom`` fails the way a buggy tool does."""

    names = {"probe", "boom"}

    def schemas(self) -> list[dict[str, Any]]:
        return [
            {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
            for n in ("probe", "boom")
        ]

    async def call(self, name: str, arguments: dict[str, Any], ctx: Any = None) -> ToolOutcome:
        if name == "boom":
            raise RuntimeError("it broke")
        ctx.on_output({"output_type": "stream", "name": "stdout", "text": "live\n"})
        told = {"step": ctx.step, "id": ctx.tool_call_id, "hooks": ctx.hooks is not None}
        return ToolOutcome(text=json.dumps(told))


def runner(tmp_path: Path, **kw: Any) -> tuple[ToolRunner, list[ev.Event]]:
    events: list[ev.Event] = []
    stop = StopSignal(None)
    stop.reset()
    tools = CombinedToolset([ToolBox(None, tmp_path), Probe()])
    kw.setdefault("approval", {})
    kw.setdefault("approver", None)
    return ToolRunner(tools, EventBus([events.append]), stop.guard, **kw), events


def types(events: list[ev.Event]) -> list[str]:
    return [e.type for e in events]


async def test_a_call_is_told_its_step_and_id_and_its_output_goes_on_the_bus(tmp_path):
    run, events = runner(tmp_path)
    outcome, ok = await run.run(ToolContext(step=3, tool_call_id="c7"), "probe", "{}")
    assert ok and json.loads(outcome.text) == {"step": 3, "id": "c7", "hooks": False}
    assert types(events) == ["tool_call_started", "cell_output"]
    started, output = events
    assert (started.step, started.tool_call_id, started.name) == (3, "c7", "probe")
    assert output.tool_call_id == "c7" and output.output["text"] == "live\n"


async def test_arguments_that_are_not_json_are_refused_before_anything_runs(tmp_path):
    run, events = runner(tmp_path)
    outcome, ok = await run.run(ToolContext(1, "c1"), "write_file", '{"path": "a.txt",')
    assert not ok and outcome.status == "refused"
    assert outcome.text.startswith("Error: the arguments for 'write_file' are not valid JSON")
    assert events == [] and not (tmp_path / "a.txt").exists()
    raw = '{"path": "a.txt", "content": "line one\nline two"}'  # a raw newline: accepted
    outcome, ok = await run.run(ToolContext(1, "c2"), "write_file", raw)
    assert ok and (tmp_path / "a.txt").read_text() == "line one\nline two"
    outcome, ok = await run.run(ToolContext(1, "c3"), "write_file", "[1, 2]")
    assert not ok and outcome.text == "Error: arguments for 'write_file' must be a JSON object"


async def test_an_unknown_tool_names_every_tool_there_is(tmp_path):
    run, _ = runner(tmp_path)
    outcome, ok = await run.run(ToolContext(1, "c1"), "rm_rf", "{}")
    assert not ok and outcome.status == "refused"
    assert outcome.text.startswith("Error: unknown tool 'rm_rf'; available: run_cell,")
    assert outcome.text.endswith("update_plan, probe, boom")


async def test_a_refusal_is_well_formed_and_a_failing_tool_is_an_error(tmp_path):
    run, _ = runner(tmp_path)
    outcome, ok = await run.run(ToolContext(1, "c1"), "read_file", {"path": "nope.txt"})
    assert ok and outcome.status == "refused" and outcome.text.startswith("Error:")
    outcome, ok = await run.run(ToolContext(1, "c2"), "boom", {})
    assert ok and outcome.status == "error"
    assert outcome.text == "Error: tool boom failed: RuntimeError: it broke"
    outcome, ok = await run.run(ToolContext(1, "c3"), "run_cell", {"code": "1"})
    assert ok and outcome.text == "Error: no sandbox is attached to this session; code cannot run"


async def test_a_tool_under_ask_waits_for_the_approver(tmp_path):
    asked: list[tuple[str, str]] = []

    async def approver(call_id: str, name: str, arguments: Any) -> Any:
        asked.append((call_id, name))
        return (True, "session") if call_id == "yes" else False

    run, events = runner(tmp_path, approval={"write_file": "ask"}, approver=approver)
    args = {"path": "a.txt", "content": "x"}
    outcome, ok = await run.run(ToolContext(2, "no"), "write_file", args)
    assert ok and outcome.status == "denied" and not (tmp_path / "a.txt").exists()
    assert types(events) == ["approval_requested", "approval_decided"]  # never started
    assert events[1].approved is False
    events.clear()
    outcome, ok = await run.run(ToolContext(2, "yes"), "write_file", args)
    assert outcome.status == "ok" and (tmp_path / "a.txt").read_text() == "x"
    assert types(events) == ["approval_requested", "approval_decided", "tool_call_started"]
    assert events[1].remember == "session"
    assert asked == [("no", "write_file"), ("yes", "write_file")]


class Guard:
    """A hook: no writes outside notes/, plans are rewritten, results are marked."""

    name = "guard"

    def __init__(self) -> None:
        self.calls: list[tuple[int, str, str]] = []

    def before_tool(self, call: Any) -> Any:
        self.calls.append((call.step, call.tool_call_id, call.name))
        if call.name == "write_file" and not call.arguments["path"].startswith("notes/"):
            return Deny("writes go to notes/")
        if call.name == "write_file":
            return Modify({**call.arguments, "content": call.arguments["content"].upper()})
        return None

    def after_tool(self, call: Any, outcome: ToolOutcome) -> Any:
        if call.name == "probe":
            return ToolOutcome(text=outcome.text + " (seen by guard)")
        return None


async def test_hooks_given_at_construction_see_deny_change_and_replace(tmp_path):
    guard = Guard()
    run, events = runner(tmp_path, hooks=HookChain([guard], session_id="s1"))
    denied, ok = await run.run(ToolContext(1, "c1"), "write_file", {"path": "a", "content": "x"})
    assert ok and denied.status == "denied" and "writes go to notes/" in denied.text
    assert not (tmp_path / "a").exists() and events == []
    changed, _ = await run.run(
        ToolContext(1, "c2"), "write_file", {"path": "notes/a", "content": "x"}
    )
    assert changed.status == "ok" and (tmp_path / "notes" / "a").read_text() == "X"
    replaced, _ = await run.run(ToolContext(2, "c3"), "probe", {})
    assert replaced.text.endswith(" (seen by guard)")
    assert json.loads(replaced.text.split(" (")[0])["hooks"] is True  # the tool gets them too
    assert guard.calls == [(1, "c1", "write_file"), (1, "c2", "write_file"), (2, "c3", "probe")]
