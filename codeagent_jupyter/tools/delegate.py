"""The ``delegate`` tool: independent tasks run by helper agents, in parallel, in sandboxes of
their own, each starting from a snapshot of the parent's workspace.

A helper is a whole agent loop (same model, a budget carved out of the parent's) in a fresh
sandbox whose workspace is a private copy of the parent's files at the moment of the call.
When the helpers are done, the files each one wrote or changed are copied into the
parent's workspace under ``delegates/<call>-<helper>/`` (``helper_files``: both copies are
held to the workspace's disk budget before a byte is written, so a helper whose copy would
not fit does not start, and files that would take the parent past it stay behind, each
said in one line). One tool result lists each helper's status, answer, files and time
window. Each helper's session is recorded as its own notebook (``record``, given by the
edge). Cancelling the parent's run cancels the tool call, which cancels every helper and
shuts its sandbox down.

Every event of a helper also goes out on the parent's bus as a ``HelperEvent`` (JSON type
``child_event``) carrying the id of the ``delegate`` call (``parent_tool_call_id``, from the
call's ``ToolContext``) and the helper's label, so the parent's notebook, the server's
stream, the CLI and the panel show the helpers' work under that call. The parent's tool
hooks reach every helper's calls the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import logging
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import events as ev
from ..config import AgentConfig
from ..core.assembly import build_agent
from ..core.bus import EventBus
from ..core.outcome import ToolOutcome
from ..core.ports import EventSink, Model, SnapshotPort
from ..core.toolset import ToolContext
from ..errors import ToolArgumentError, ToolError
from ..traits import ToolTraits
from ..util.disk_budget import DiskBudgetError
from ._schema import Tool
from .helper_files import copy_back, copy_out
from .toolbox import ToolBox

log = logging.getLogger(__name__)

NAME = "delegate"
"""The tool that starts helper agents (its name is part of the model's contract)."""


async def _run_by_helper_tool(box: Any, **args: Any) -> ToolOutcome:
    raise ToolError(f"{NAME} is run by its own toolset (HelperTool), not by ToolBox")


TOOL = Tool(
    NAME,
    "Run several independent tasks at once, each by a helper agent in its own sandbox "
    "that starts with a copy of the workspace. Use it only for tasks that do not depend "
    "on each other. Returns each helper's answer and the files it wrote (copied under "
    "delegates/).",
    {
        "type": "object",
        "properties": {
            "tasks": {
                "type": "array",
                "items": {"type": "string", "minLength": 1},
                "minItems": 1,
                "description": "One self-contained instruction per helper.",
            }
        },
        "required": ["tasks"],
        "additionalProperties": False,
    },
    _run_by_helper_tool,
    # Helpers run in sandboxes of their own, under the session's hooks (checked there); their
    # files come back into the workspace (snapshotted after).
    ToolTraits(
        "host", writes_workspace=True, policy_checked=False, over_mcp=False, starts_agents=True
    ),
    prompt="delegate hands independent sub-tasks to helper agents that work in parallel.",
    prompt_rank=90,
)
SCHEMA: dict[str, Any] = TOOL.schema()


@dataclass(frozen=True)
class HelperSettings:
    """Limits on helpers, set by whoever runs the agent (the administrator on a server)."""

    max_per_call: int = 3
    """Tasks one ``delegate`` call may start."""
    max_total: int = 6
    """Helpers one session may start in all."""
    helper_max_steps: int = 10
    """Model calls each helper may make at most (less when the parent's share is smaller)."""


def carve(ctx: ToolContext | None, helpers: int, helper_max_steps: int) -> AgentConfig:
    """A helper's budget: an equal share of what the parent's run has left, the parent
    keeping one share for itself (``left // (helpers + 1)``, at least one step), never more
    than ``helper_max_steps`` steps. Without a context, the plain helper budget."""
    if ctx is None:
        return AgentConfig(max_steps=helper_max_steps)
    cfg = ctx.config
    steps_left = max(cfg.max_steps - ctx.steps_taken, 0)
    tokens_left = max(cfg.max_tokens - ctx.tokens_used, 0)
    return AgentConfig(
        max_steps=max(min(helper_max_steps, steps_left // (helpers + 1)), 1),
        max_tokens=max(tokens_left // (helpers + 1), 1),
        max_wall_s=cfg.max_wall_s,
        approval=dict(cfg.approval),
        result_chars=cfg.result_chars,
    )


HelperRecording = Callable[[str], EventSink]
"""``label -> sink``: records helper ``label``'s own session (a notebook recorder, whose
``path`` names the notebook in the tool result)."""


class HelperTool:
    """The ``delegate`` tool of one parent session: a ``Toolset`` with one tool."""

    def __init__(
        self,
        model: Model,
        workdir: Path,
        sandbox_factory: Callable[[Path], Any],
        store: SnapshotPort,
        record: HelperRecording,
        settings: HelperSettings | None = None,
        *,
        session: str | None = None,
        disk_mb: int | None = None,
        earlier: tuple[int, int] = (0, 0),
    ) -> None:
        self.model = model
        self.workdir = Path(workdir)
        self.sandbox_factory = sandbox_factory
        """``workdir -> async context manager of a started sandbox`` (limits already chosen)."""
        self.store = store
        self.record = record
        self.settings = settings or HelperSettings()
        self.session = session
        """The parent session's id: its reference to the snapshots taken for helpers."""
        self.disk_mb = disk_mb
        """The workspace budget (MiB) helpers' workspaces and the copies back must fit."""
        self.started, self.calls = earlier
        """Helpers started and ``delegate`` calls made so far (a resumed session's earlier
        ones included, so labels stay unique)."""

    @property
    def names(self) -> set[str]:
        return {NAME}

    def schemas(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(SCHEMA)]

    def definition(self, name: str) -> Tool | None:
        """This toolset's one tool's declaration (traits, prompt line)."""
        return TOOL if name == NAME else None

    def prompt_lines(self) -> list[tuple[int, str]]:
        return [(TOOL.prompt_rank, TOOL.prompt)]

    async def call(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext | None = None
    ) -> ToolOutcome:
        if name != NAME:
            raise ToolArgumentError(f"unknown tool {name!r}; available: {NAME}")
        tasks = arguments.get("tasks")
        if (
            not isinstance(tasks, list)
            or not tasks
            or not all(isinstance(t, str) and t.strip() for t in tasks)
        ):
            raise ToolArgumentError("delegate needs 'tasks': a list of non-empty strings")
        cap = self.settings
        if len(tasks) > cap.max_per_call:
            raise ToolArgumentError(f"delegate takes at most {cap.max_per_call} tasks per call")
        if self.started + len(tasks) > cap.max_total:
            left = cap.max_total - self.started
            raise ToolArgumentError(f"only {left} more helper(s) may be started in this session")
        self.started += len(tasks)
        self.calls += 1
        for _ in range(1000):  # a fork's restored workspace may hold helpers' folders already
            if not any((self.workdir / "delegates").glob(f"{self.calls}-*")):
                break
            self.calls += 1
        ctx = ctx or ToolContext()
        # walks and hashes what the sandbox wrote: in a thread, off the caller's event loop
        seed = (await asyncio.to_thread(self.store.capture, self.workdir, session=self.session)).id
        t0 = time.monotonic()
        config = carve(ctx, len(tasks), cap.helper_max_steps)
        helpers = [
            self._helper(f"{self.calls}-{i + 1}", t, seed, t0, ctx, config)
            for i, t in enumerate(tasks)
        ]
        results = await asyncio.gather(*helpers)
        ok = all(r["status"] == ev.ANSWERED for r in results)
        text = json.dumps({"helpers": results}, indent=1)
        return ToolOutcome("ok" if ok else "error", text)

    async def _helper(
        self, label: str, task: str, seed: str, t0: float, ctx: ToolContext, config: AgentConfig
    ) -> dict[str, Any]:
        """Run one helper to its end; every failure but a cancel is its result, not an
        exception, so one helper that cannot start never leaves the others running alone."""
        tmp = Path(tempfile.mkdtemp(prefix="codeagent-helper-"))
        ws = tmp / "ws"
        ws.mkdir()
        result: dict[str, Any] = {"helper": label, "task": task}
        result["budget"] = {"max_steps": config.max_steps, "max_tokens": config.max_tokens}
        try:
            await asyncio.to_thread(copy_out, self.store, seed, ws, self.disk_mb)
            began = time.monotonic() - t0
            finished, notebook = await self._run(label, task, ws, ctx, config)
            result |= {"status": finished.status, "answer": finished.answer or finished.reason}
            result |= {"steps": finished.steps, "usage": finished.usage}
            result |= {"started_s": round(began, 3), "finished_s": round(time.monotonic() - t0, 3)}
            try:
                result["files"] = await asyncio.to_thread(
                    copy_back, self.store, ws, seed, self.workdir, label, self.disk_mb, self.session
                )
            except DiskBudgetError as e:
                result |= {"files": [], "files_not_copied": str(e)}
            if notebook:
                result["notebook"] = notebook
        except Exception as exc:
            log.warning("helper %s failed: %s", label, exc)
            result |= {"status": "error", "answer": f"the helper could not run: {exc}"}
        finally:
            with contextlib.suppress(OSError):
                shutil.rmtree(tmp)
        return result

    async def _run(
        self, label: str, task: str, ws: Path, ctx: ToolContext, config: AgentConfig
    ) -> tuple[ev.RunFinished, str]:
        """The helper's own session: its sandbox, its recording, the parent's hooks."""
        async with self.sandbox_factory(ws) as sandbox:
            recording = self.record(label)
            forward = _forward(ctx, label, task)
            bus = EventBus([recording.emit, forward], keep=False)
            vision = config.sees(getattr(self.model, "name", ""))
            tools = ToolBox(sandbox, Path(sandbox.workdir), vision=vision)
            loop = build_agent(self.model, sandbox, bus, config, tools=tools, hooks=ctx.hooks)
            try:
                finished = await loop.run(task)
            finally:
                if ctx.charge is not None:  # also when cancelled: the tokens were spent
                    ctx.charge(loop.usage)
        path = getattr(recording, "path", None)
        return finished, Path(path).name if path else ""


def _forward(ctx: ToolContext, label: str, task: str) -> Any:
    """A subscriber of a helper's bus that re-publishes each event on the parent's, under
    the ``delegate`` call it serves."""

    def forward(event: ev.Event) -> None:
        if ctx.publish is not None:
            ctx.publish(
                ev.HelperEvent,
                parent_tool_call_id=ctx.tool_call_id,
                child=label,
                task=task,
                event=event.to_dict(),
            )

    return forward
