"""The agent loop end to end: real openai client, scripted model server, real sandbox kernel."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import nbformat
import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.config import AgentConfig, SandboxLimits
from codeagent_jupyter.core.loop import AgentLoop
from codeagent_jupyter.models.openai_chat import OpenAIChatModel
from codeagent_jupyter.record.recorder import NotebookRecorder
from codeagent_jupyter.sandbox import Sandbox
from codeagent_jupyter.tools import ToolBox
from tests.scripted_model import error, raw_tool_call, text, tool_calls


class Collect:
    """An event sink that keeps everything, for assertions."""

    def __init__(self) -> None:
        self.events: list[ev.Event] = []

    def emit(self, event: ev.Event) -> None:
        self.events.append(event)

    def of(self, kind: type[ev.Event]) -> list:
        return [e for e in self.events if isinstance(e, kind)]


@pytest.fixture
async def sandbox(tmp_path: Path):
    limits = SandboxLimits(cell_timeout=3, memory_mb=1024)
    async with Sandbox(workdir=tmp_path, limits=limits) as sb:
        yield sb


def make_loop(srv, sandbox, tmp_path: Path, *, stream: bool = False, **config):
    model = OpenAIChatModel("scripted", srv.url, "test-key", stream=stream, backoff=0.01)
    sink = Collect()
    recorder = NotebookRecorder(tmp_path / "session.ipynb", session_id="t1")
    loop = AgentLoop(
        model,
        sandbox,
        ToolBox(sandbox, tmp_path),
        [recorder, sink],
        AgentConfig(**config),
        context="## Context\nThe workspace is empty.",
    )
    return loop, sink, tmp_path / "session.ipynb"


def tool_messages(request: dict) -> list[dict]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def said(content: str) -> str:
    """A result without what the loop and the cell add at its end: the budget left and how
    long the cell ran."""
    lines = content.split("\n")
    while lines and re.fullmatch(r"\[(ran [^\]]*|budget left: [^\]]*)\]", lines[-1]):
        lines.pop()
    return "\n".join(lines)


@pytest.mark.parametrize("stream", [False, True])
async def test_self_correction_and_state(scripted_model, sandbox, tmp_path, stream):
    scripted_model.set_script(
        [
            tool_calls(("update_plan", {"steps": [{"step": "compute", "status": "in_progress"}]})),
            tool_calls(("run_cell", {"code": "values = [1, 2, 3]\nprint(totl)"})),
            tool_calls(("run_cell", {"code": "total = sum(values)\nprint(total)"})),
            text("The total is 6."),
        ]
    )
    loop, sink, nb_path = make_loop(scripted_model, sandbox, tmp_path, stream=stream)
    finished = await loop.run("add up 1, 2 and 3")

    assert finished.status == ev.ANSWERED
    assert finished.answer == "The total is 6."
    # The traceback of the failing cell went back to the model, ANSI-free.
    failed = tool_messages(scripted_model.requests[2])[-1]["content"]
    assert "NameError" in failed and "totl" in failed and "\x1b[" not in failed
    # State survived across cells: `values` from the failing cell was used by the fix.
    assert said(tool_messages(scripted_model.requests[3])[-1]["content"]).strip() == "6"
    assert sink.of(ev.PlanUpdated)[0].steps == [{"step": "compute", "status": "in_progress"}]
    statuses = [e.status for e in sink.of(ev.ToolCallFinished)]
    assert statuses == ["ok", "error", "ok"]
    if stream:
        assert "".join(e.text for e in sink.of(ev.TextDelta)) == "The total is 6."
        assert all(r.get("stream") for r in scripted_model.requests)
    nb = nbformat.read(nb_path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.outputs[0].output_type for c in code] == ["error", "stream"]


async def test_requests_are_cache_friendly(scripted_model, sandbox, tmp_path):
    scripted_model.set_script(
        [tool_calls(("run_cell", {"code": f"x{i} = {i}"})) for i in range(3)] + [text("done")]
    )
    loop, _, _ = make_loop(scripted_model, sandbox, tmp_path)
    await loop.run("go")
    reqs = scripted_model.requests
    # Same tools and system prompt every time, and each request extends the previous one.
    assert len({json.dumps(r["tools"], sort_keys=False) for r in reqs}) == 1
    for before, after in itertools.pairwise(reqs):
        assert after["messages"][: len(before["messages"])] == before["messages"]


async def test_malformed_unknown_and_parallel_calls_all_answered(scripted_model, sandbox, tmp_path):
    bad = raw_tool_call("run_cell", '{"code": "print(1)"')
    scripted_model.set_script(
        [
            bad,
            tool_calls(("launch_rocket", {"where": "moon"})),
            tool_calls(
                ("run_cell", {"code": "a = 40"}),
                ("run_cell", {"code": "print(a + 2)"}),
                ("list_files", {}),
            ),
            text("42"),
        ]
    )
    loop, sink, _ = make_loop(scripted_model, sandbox, tmp_path)
    finished = await loop.run("compute")
    # The scripted server rejects unanswered or unknown tool_call ids (HTTP 400), so an
    # answered run proves every call got exactly one reply.
    assert finished.status == ev.ANSWERED, finished.reason
    first, second, third = (tool_messages(r) for r in scripted_model.requests[1:4])
    assert "not valid JSON" in first[-1]["content"]
    assert "unknown tool" in second[-1]["content"] and "run_cell" in second[-1]["content"]
    assert [said(m["content"]).strip() for m in third[-3:-1]] == ["(no output)", "42"]
    refused = [e for e in sink.of(ev.ToolCallFinished) if e.status == "refused"]
    assert len(refused) == 2


async def test_consecutive_malformed_calls_stop_the_run(scripted_model, sandbox, tmp_path):
    scripted_model.set_script([raw_tool_call("run_cell", "{oops") for _ in range(3)])
    loop, _, nb_path = make_loop(scripted_model, sandbox, tmp_path, max_malformed=3)
    finished = await loop.run("x")
    assert finished.status == ev.MALFORMED
    assert nbformat.read(nb_path, as_version=4).metadata.codeagent["status"] == ev.MALFORMED


async def test_rate_limit_then_success_and_persistent_500(scripted_model, sandbox, tmp_path):
    scripted_model.set_script([error(429, retry_after=0.2), text("after the wait")])
    loop, sink, _ = make_loop(scripted_model, sandbox, tmp_path)
    finished = await loop.run("hello")
    assert finished.answer == "after the wait"
    retries = sink.of(ev.ModelRetry)
    assert len(retries) == 1 and retries[0].wait_s >= 0.2 and "429" in retries[0].reason

    scripted_model.set_script([error(500) for _ in range(10)])
    finished = await loop.run("again")
    assert finished.status == ev.MODEL_ERROR
    assert "500" in finished.reason and "\n" not in finished.reason


async def test_timeout_and_kernel_death_mid_run(scripted_model, sandbox, tmp_path):
    scripted_model.set_script(
        [
            tool_calls(
                ("run_cell", {"code": "keep = 1\nimport time\nprint('start')\ntime.sleep(60)"})
            ),
            tool_calls(("run_cell", {"code": "print(keep)"})),
            tool_calls(("run_cell", {"code": "import os\nos._exit(1)"})),
            tool_calls(("run_cell", {"code": "print('alive')"})),
            text("recovered"),
        ]
    )
    loop, sink, _ = make_loop(scripted_model, sandbox, tmp_path)
    finished = await loop.run("x")
    assert finished.status == ev.ANSWERED
    done = sink.of(ev.ToolCallFinished)
    assert done[0].status == "timeout" and "start" in done[0].result
    assert done[1].status == "ok" and said(done[1].result) == "1"  # state kept after interrupt
    assert done[2].status == "died"
    died_msg = tool_messages(scripted_model.requests[3])[-1]["content"]
    assert "died" in died_msg.lower() and "lost" in died_msg.lower()
    assert said(done[3].result).strip() == "alive"


async def test_huge_output_is_bounded_for_the_model(scripted_model, sandbox, tmp_path):
    scripted_model.set_script(
        [tool_calls(("run_cell", {"code": "print('x' * 5_000_000)\nprint('END')"})), text("ok")]
    )
    loop, _, nb_path = make_loop(scripted_model, sandbox, tmp_path)
    await loop.run("print a lot")
    last_request = json.dumps(scripted_model.requests[-1])
    assert len(last_request) < 100_000
    assert "END" in tool_messages(scripted_model.requests[-1])[-1]["content"]
    assert nb_path.stat().st_size < 3_000_000


async def test_path_escape_is_refused_and_step_budget(scripted_model, sandbox, tmp_path):
    (tmp_path / "inside.txt").write_text("hello\n")
    scripted_model.set_script(
        [
            tool_calls(("read_file", {"path": "../../etc/passwd"})),
            tool_calls(("read_file", {"path": "inside.txt"})),
            tool_calls(("run_cell", {"code": "1"})),
        ]
    )
    loop, _, nb_path = make_loop(scripted_model, sandbox, tmp_path, max_steps=3)
    finished = await loop.run("read")
    assert finished.status == ev.MAX_STEPS and "3" in finished.reason
    escape, inside = (tool_messages(r)[-1]["content"] for r in scripted_model.requests[1:3])
    assert "outside the workspace" in escape and "root:" not in escape
    assert "hello" in inside
    meta = nbformat.read(nb_path, as_version=4).metadata.codeagent
    assert meta["status"] == ev.MAX_STEPS


async def test_follow_up_keeps_history_and_sandbox(scripted_model, sandbox, tmp_path):
    scripted_model.set_script([tool_calls(("run_cell", {"code": "n = 5"})), text("set")])
    loop, sink, nb_path = make_loop(scripted_model, sandbox, tmp_path)
    await loop.run("set n")
    scripted_model.set_script([tool_calls(("run_cell", {"code": "print(n * 2)"})), text("10")])
    finished = await loop.run("double it")
    assert finished.answer == "10"
    assert said(tool_messages(scripted_model.requests[-1])[-1]["content"]).strip() == "10"
    seqs = [e.seq for e in sink.events]
    assert seqs == list(range(len(seqs)))
    prompts = [c for c in nbformat.read(nb_path, as_version=4).cells if "double it" in c.source]
    assert prompts, "the follow-up prompt is recorded in the same notebook"


async def test_cancel_interrupts_running_cell(scripted_model, sandbox, tmp_path):
    import asyncio

    scripted_model.set_script([tool_calls(("run_cell", {"code": "while True: pass"}))])
    loop, sink, _ = make_loop(scripted_model, sandbox, tmp_path)
    task = asyncio.ensure_future(loop.run("spin"))
    for _ in range(100):
        if sink.of(ev.ToolCallStarted):
            break
        await asyncio.sleep(0.05)
    loop.cancel()
    finished = await asyncio.wait_for(task, 10)
    assert finished.status == ev.CANCELLED
    assert sink.of(ev.ToolCallFinished), "the interrupted cell is still recorded"
    result = await sandbox.execute("print('still here')")
    assert "still here" in result.text


async def test_a_run_task_cancelled_inside_a_cell_leaves_a_follow_up_the_api_accepts(
    scripted_model, sandbox, tmp_path
):
    """The run's task itself cancelled while its cell runs (as a pause or a shutdown does):
    the call has no result, and the next run must answer it before its prompt (the scripted
    model refuses a conversation with an unanswered call, as the real APIs do)."""
    import asyncio

    scripted_model.set_script([tool_calls(("run_cell", {"code": "import time; time.sleep(30)"}))])
    loop, sink, _ = make_loop(scripted_model, sandbox, tmp_path)
    task = asyncio.ensure_future(loop.run("wait"))
    for _ in range(200):
        if sink.of(ev.ToolCallStarted):
            break
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await sandbox.interrupt()
    scripted_model.set_script([text("fine")])
    finished = await loop.run("go on")
    assert finished.status == ev.ANSWERED and finished.answer == "fine"
    sent = scripted_model.requests[-1]["messages"]
    prompt = next(i for i, m in enumerate(sent) if m["role"] == "user" and "go on" in m["content"])
    assert sent[prompt - 1]["role"] == "tool" and "interrupted" in sent[prompt - 1]["content"]


async def test_raw_newlines_in_arguments_are_accepted(scripted_model, sandbox, tmp_path):
    """Local models often put real newlines inside JSON strings; the intent is clear."""
    scripted_model.set_script(
        [tool_calls(("run_cell", '{"code": "a = 2\nprint(a * 21)"}')), text("done")]
    )
    loop, sink, _ = make_loop(scripted_model, sandbox, tmp_path)
    finished = await loop.run("x")
    assert finished.status == ev.ANSWERED
    assert [said(e.result).strip() for e in sink.of(ev.ToolCallFinished)] == ["42"]


async def test_result_chars_is_what_reaches_the_model(scripted_model, sandbox, tmp_path):
    """``AgentConfig.result_chars`` bounds a cell's text, not the sandbox's own rendering."""
    from codeagent_jupyter.core.assembly import build_agent

    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": "print('x' * 12000, end='')"})),
            tool_calls(("run_cell", {"code": "print('y' * 30000, end='')"})),
            text("done"),
        ]
    )
    model = OpenAIChatModel("scripted", scripted_model.url, "test-key", backoff=0.01)
    tools = ToolBox(sandbox, tmp_path)  # the run's config reaches it through the context
    loop = build_agent(model, sandbox, [], AgentConfig(result_chars=12000), tools=tools)
    assert (await loop.run("print a lot")).status == ev.ANSWERED
    assert said(tool_messages(scripted_model.requests[1])[-1]["content"]) == "x" * 12000
    bounded = said(tool_messages(scripted_model.requests[2])[-1]["content"])
    assert 12000 <= len(bounded) <= 12100 and "characters elided" in bounded


async def test_a_timeout_note_is_said_once(scripted_model, sandbox, tmp_path):
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": "import time\nprint('before')\ntime.sleep(30)"})),
            text("it timed out"),
        ]
    )
    loop, sink, _ = make_loop(scripted_model, sandbox, tmp_path)
    await loop.run("sleep")
    content = tool_messages(scripted_model.requests[1])[-1]["content"]
    assert content.startswith("[cell status: timeout, after ")
    assert " s. interrupted after 3 s" in content.splitlines()[0]
    assert content.count("interrupted") == 1 and "before" in content
    (finished,) = sink.of(ev.ToolCallFinished)
    assert finished.result == said(content) and finished.status == "timeout"
