"""The first model request goes out while the sandbox starts (``StartingSandbox``): the run
begins, with what the sandbox really enforces, once it is ready; the first cell waits for it.

The sandbox's kernel here starts only once the model has been asked (a gated kernel
manager, a real kernel after it): a loop that waited for the sandbox before asking would
never open the gate.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.config import SandboxLimits
from codeagent_jupyter.core.assembly import build_agent
from codeagent_jupyter.core.starting import StartingSandbox
from codeagent_jupyter.core.stopping import RunStopped
from codeagent_jupyter.errors import SandboxError
from codeagent_jupyter.models.openai_chat import OpenAIChatModel
from codeagent_jupyter.sandbox import Sandbox
from codeagent_jupyter.tools import ToolBox
from tests.core.kernel_managers import GatedKernelManager
from tests.scripted_model import text, tool_calls

LIMITS = SandboxLimits(memory_mb=1024, cell_timeout=30)


class Timeline:
    """What happened, in order: the sandbox's readiness and every event."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def emit(self, event: ev.Event) -> None:
        self.seen.append(event)

    def ready(self, sandbox: Any) -> None:
        self.seen.append("ready")


def asked_opens_the_gate(turns: list[dict[str, Any]]) -> Any:
    """A responder: the first request opens the kernel's gate; then the turns in order."""
    left = list(turns)

    def respond(messages: list[dict[str, Any]]) -> dict[str, Any]:
        GatedKernelManager.gate.set()
        return left.pop(0)

    return respond


@pytest.fixture(autouse=True)
def closed_gate():
    GatedKernelManager.gate.clear()
    GatedKernelManager.opened_in_time = None
    yield
    GatedKernelManager.gate.set()  # never leave a start waiting


def gated(tmp_path: Path, timeline: Timeline) -> StartingSandbox:
    sandbox = Sandbox(workdir=tmp_path, limits=LIMITS, kernel_manager_class=GatedKernelManager)
    return StartingSandbox(sandbox, on_ready=timeline.ready)


async def test_the_model_is_asked_while_the_sandbox_starts(scripted_model, tmp_path):
    turns = [
        tool_calls(("run_cell", {"code": "print('hi')"}), content="Running it."),
        text("done"),
    ]
    scripted_model.set_script(asked_opens_the_gate(turns))
    model = OpenAIChatModel("scripted", scripted_model.url, "k", stream=True, backoff=0.01)
    timeline = Timeline()
    async with gated(tmp_path, timeline) as sandbox:
        assert not sandbox.started
        tools = ToolBox(sandbox, tmp_path)
        loop = build_agent(model, sandbox, [timeline], tools=tools)
        finished = await loop.run("say hi")
        await model.aclose()
    assert finished.status == ev.ANSWERED, finished.reason
    assert GatedKernelManager.opened_in_time is True  # asked before the kernel started
    assert timeline.seen[0] == "ready"  # the CLI says what is enforced here, first
    started = timeline.seen[1]
    assert isinstance(started, ev.RunStarted) and started.seq == 0
    assert started.enforcement.get("cpu") == "rlimit" and started.limits["memory_mb"] == 1024
    deltas = [e for e in timeline.seen if isinstance(e, ev.TextDelta)]
    assert "".join(d.text for d in deltas) == "Running it.done"  # held, then in order
    (cell,) = [e for e in timeline.seen if isinstance(e, ev.ToolCallFinished)]
    assert cell.status == "ok" and cell.outputs[0]["text"] == "hi\n"
    seqs = [e.seq for e in timeline.seen[1:]]
    assert seqs == list(range(len(seqs)))


async def test_a_sandbox_that_cannot_start_raises_and_nothing_is_published(
    scripted_model, tmp_path
):
    scripted_model.set_script([text("never used")])
    model = OpenAIChatModel("scripted", scripted_model.url, "k", backoff=0.01)
    timeline = Timeline()
    broken = Sandbox(workdir=tmp_path, limits=LIMITS, kernel_name="no-such-kernel-spec")
    async with StartingSandbox(broken, on_ready=timeline.ready) as sandbox:
        loop = build_agent(model, sandbox, [timeline], tools=ToolBox(sandbox, tmp_path))
        with pytest.raises(SandboxError, match="no-such-kernel-spec"):
            await loop.run("anything")
        await model.aclose()
    assert timeline.seen == [] and not loop.running
    assert loop.messages[-1]["role"] == "system"  # the request is not left half-asked


async def test_a_stop_while_the_sandbox_starts_begins_no_run(scripted_model, tmp_path):
    asked = threading.Event()

    def respond(messages: list[dict[str, Any]]) -> dict[str, Any]:
        asked.set()  # the gate stays shut: the kernel waits while the run is stopped
        return text("never shown")

    scripted_model.set_script(respond)
    model = OpenAIChatModel("scripted", scripted_model.url, "k", backoff=0.01)
    timeline = Timeline()
    starting = gated(tmp_path, timeline)
    loop = build_agent(model, starting, [timeline], tools=ToolBox(starting, tmp_path))
    run = asyncio.ensure_future(loop.run("stop me"))
    assert await asyncio.to_thread(asked.wait, 60)  # the model was asked; the kernel waits
    loop.cancel("stopped by SIGINT")
    with pytest.raises(RunStopped, match="SIGINT"):
        await run
    assert timeline.seen == []
    GatedKernelManager.gate.set()
    await starting.aclose()  # waits for the start under way, then shuts the kernel down
    await model.aclose()
    assert not starting.sandbox.is_alive()
