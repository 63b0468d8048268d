"""Run one task in a sandbox, through the agent loop or as a one-shot script, and check it.

``build_agent`` is the only place the agent is wired; it follows ``codeagent run`` (same
tools, context and recorder) so the suite measures what users get. A run never raises for
the model's or the sandbox's failures: they become a failed ``Outcome`` with a reason.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from codeagent_jupyter import events as ev
from codeagent_jupyter.config import AgentConfig
from codeagent_jupyter.core import assembly as agent
from codeagent_jupyter.core.context import build_context
from codeagent_jupyter.core.loop import AgentLoop
from codeagent_jupyter.core.ports import EventSink, Model
from codeagent_jupyter.errors import CodeAgentError
from codeagent_jupyter.record.recorder import NotebookRecorder
from codeagent_jupyter.tools import ToolBox

from . import Task

ModelFactory = Callable[[Task], Model]
"""A fresh model per task run (a replayed recording is consumed by one run)."""

ONE_SHOT_SYSTEM = """\
You are a data scientist. Write one complete Python script that does what the user asks.
It will be run once, as is, with no chance to fix it, in the folder that holds the files.
Reply with the script in a single ```python code block. The script must print its final
answer (the numbers or names asked for) at the end.
"""
_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)
RESET = "%reset -f\nimport os as _os\n_os.chdir({path!r})\ndel _os\n"
"""Prepares a shared kernel for the next task: empty namespace, the task's folder."""


@dataclass
class Outcome:
    """One task run and its verdict; the table and the summary are made from these."""

    task: str
    category: str
    mode: str
    passed: bool
    reason: str
    status: str
    steps: int
    tokens: int
    estimated: bool
    wall_s: float
    recovered: int
    notebook: Path | None
    tier: str = "easy"


class _Events:
    def __init__(self) -> None:
        self.finished: list[ev.ToolCallFinished] = []

    def emit(self, event: ev.Event) -> None:
        if isinstance(event, ev.ToolCallFinished):
            self.finished.append(event)


def recovered_errors(finished: Sequence[ev.ToolCallFinished]) -> int:
    """Failed cells the run got past: each one followed, later, by a cell that ran cleanly."""
    cells = [e for e in finished if e.name in ("run_cell", "run_command")]
    last_ok = max((i for i, e in enumerate(cells) if e.status == "ok"), default=-1)
    return sum(1 for i, e in enumerate(cells[:last_ok]) if e.status in ("error", "timeout", "died"))


def build_agent(
    model: Model, sandbox: Any, workdir: Path, sinks: list[EventSink], task: Task
) -> AgentLoop:
    """The agent as ``codeagent run`` wires it, with the task's step and token budget."""
    config = AgentConfig(max_steps=task.max_steps, max_tokens=task.max_tokens)
    context = build_context(workdir, None)
    tools = ToolBox(sandbox, workdir)
    return agent.build_agent(model, sandbox, sinks, config, tools=tools, context=context)


def _verdict(task: Task, workdir: Path, answer: str) -> tuple[bool, str]:
    try:
        return task.check(workdir, answer)
    except Exception as exc:  # a checker bug must not take the whole run down
        return False, f"checker error: {type(exc).__name__}: {exc}"


async def prepare(sandbox: Any, workdir: Path, shared: bool) -> None:
    """A shared kernel starts the task with nothing left from the previous one."""
    if shared:
        await sandbox.execute(RESET.format(path=str(workdir)), store_history=False)


async def run_agent(
    task: Task, model: Model, sandbox: Any, workdir: Path, notebook: Path
) -> Outcome:
    """The task through the agent loop; the session notebook is written as it goes."""
    events = _Events()
    recorder = NotebookRecorder(notebook, session_id=f"{task.name}-agent")
    loop = build_agent(model, sandbox, workdir, [recorder, events], task)
    started = time.monotonic()
    finished = await loop.run(task.prompt)
    wall = time.monotonic() - started
    passed, reason = _verdict(task, workdir, finished.answer or "")
    if finished.status != ev.ANSWERED:
        reason = f"{finished.status}: {finished.reason}; {reason}"
    usage = finished.usage or {}
    return Outcome(
        task=task.name,
        category=task.category,
        mode="agent",
        passed=passed,
        reason=reason,
        status=finished.status,
        steps=finished.steps,
        tokens=int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0)),
        estimated=bool(usage.get("estimated")),
        wall_s=wall,
        recovered=recovered_errors(events.finished),
        notebook=notebook,
        tier=task.tier,
    )


def script_of(text: str) -> str:
    """The code of a one-shot reply: its fenced blocks joined, or the whole text if none."""
    blocks = _FENCE.findall(text or "")
    return "\n\n".join(b.strip("\n") for b in blocks) if blocks else (text or "")


async def run_one_shot(
    task: Task, model: Model, sandbox: Any, workdir: Path, notebook: Path
) -> Outcome:
    """The baseline: the same model asked once for a whole script, run once, no feedback."""
    context = build_context(workdir, None)
    messages = [
        {"role": "system", "content": ONE_SHOT_SYSTEM},
        {"role": "user", "content": f"{context}\n\n## Request\n{task.prompt}"},
    ]
    started = time.monotonic()
    try:
        reply = await model.complete(messages, [])
    except CodeAgentError as exc:
        return _no_script(task, notebook, f"model_error: {exc}", time.monotonic() - started)
    text = str(reply.message.get("content") or "")
    code = script_of(text)
    result = await sandbox.execute(code)
    wall = time.monotonic() - started
    answer = f"{text}\n{result.text}"
    passed, reason = _verdict(task, workdir, answer)
    tokens = reply.usage.prompt_tokens + reply.usage.completion_tokens
    nb = new_notebook(
        cells=[
            new_markdown_cell(f"**Request:** {task.prompt}"),
            new_markdown_cell(text),
            new_code_cell(code, outputs=result.outputs, execution_count=result.execution_count),
            new_markdown_cell(f"**Check:** {'passed' if passed else 'failed'}: {reason}"),
        ],
        metadata={
            "codeagent_baseline": {"mode": "one-shot", "model": model.name, "tokens": tokens}
        },
    )
    nbformat.write(nb, str(notebook))
    return Outcome(
        task=task.name,
        category=task.category,
        mode="one-shot",
        passed=passed,
        reason=reason if result.status == "ok" else f"script {result.status}; {reason}",
        status=result.status,
        steps=1,
        tokens=tokens,
        estimated=reply.usage.estimated,
        wall_s=wall,
        recovered=0,
        notebook=notebook,
        tier=task.tier,
    )


def _no_script(task: Task, notebook: Path, reason: str, wall: float) -> Outcome:
    return Outcome(
        task.name,
        task.category,
        "one-shot",
        False,
        reason,
        "model_error",
        1,
        0,
        False,
        wall,
        0,
        None,
        task.tier,
    )
