"""The ``delegate`` tool: independent tasks run as child agents, in parallel, in sandboxes of
their own, each starting from a snapshot of the parent's workspace.

A child is a whole agent loop (same model, a step budget carved out for it) in a fresh
sandbox whose workspace is a private copy of the parent's files at the moment of the call.
When the children are done, the files each one wrote or changed are copied into the
parent's workspace under ``delegates/<call>-<child>/`` (``helper_files``: both copies are
held to the workspace's disk budget before a byte is written, so a helper whose copy would
not fit does not start, and files that would take the parent past it stay behind, each
said in one line). One tool result lists each child's status,
answer, files and time window. Each child's session is recorded as its own notebook next to
the parent's. Cancelling the parent's run cancels the tool call, which cancels every child
and shuts its sandbox down.

Every event of a child also goes out on the parent's bus as a ``ChildEvent`` carrying the id
of the ``delegate`` call (``parent_tool_call_id``) and the child's label, so the parent's
notebook, the server's stream, the CLI and the panel show the helpers' work under that call.
"""

from __future__ import annotations

import asyncio
import contextlib
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
from ..core.bus import EventBus
from ..core.outcome import ToolOutcome
from ..core.ports import Model
from ..errors import ToolArgumentError
from ..record.snapshots import SnapshotStore
from ..util.disk_budget import DiskBudgetError
from .helper_files import copy_back, copy_out

log = logging.getLogger(__name__)

SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "delegate",
        "description": (
            "Run several independent tasks at once, each by a helper agent in its own sandbox "
            "that starts with a copy of the workspace. Use it only for tasks that do not depend "
            "on each other. Returns each helper's answer and the files it wrote (copied under "
            "delegates/)."
        ),
        "parameters": {
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
    },
}


@dataclass(frozen=True)
class DelegateSettings:
    """Limits on children, set by whoever runs the agent (the administrator on a server)."""

    max_per_call: int = 3
    """Tasks one ``delegate`` call may start."""
    max_total: int = 6
    """Children one session may start in all."""
    child_max_steps: int = 10
    """Model calls each child may make at most (less when the parent's share is smaller)."""


def carve(parent: Any, children: int, child_max_steps: int) -> AgentConfig:
    """A child's budget: an equal share of what the parent has left, the parent keeping one
    share for itself (``left // (children + 1)``, at least one step), never more than
    ``child_max_steps`` steps. Without a parent loop, the plain child budget."""
    if parent is None:
        return AgentConfig(max_steps=child_max_steps)
    cfg = parent.config
    steps_left = max(cfg.max_steps - parent.steps_taken, 0)
    tokens_left = max(cfg.max_tokens - parent.usage.total, 0)
    return AgentConfig(
        max_steps=max(min(child_max_steps, steps_left // (children + 1)), 1),
        max_tokens=max(tokens_left // (children + 1), 1),
        max_wall_s=cfg.max_wall_s,
        approval=dict(cfg.approval),
        result_chars=cfg.result_chars,
    )


class Delegator:
    """Runs ``delegate`` calls for one parent session."""

    def __init__(
        self,
        model: Model,
        workdir: Path,
        sandbox_factory: Callable[[Path], Any],
        store: SnapshotStore,
        notebooks: Path,
        settings: DelegateSettings | None = None,
        *,
        session: str | None = None,
        disk_mb: int | None = None,
    ) -> None:
        self.model = model
        self.workdir = Path(workdir)
        self.sandbox_factory = sandbox_factory
        """``workdir -> async context manager of a started sandbox`` (limits already chosen)."""
        self.store = store
        self.notebooks = Path(notebooks)
        self.settings = settings or DelegateSettings()
        self.session = session
        """The parent session's id: its reference to the snapshots taken for helpers."""
        self.disk_mb = disk_mb
        """The workspace budget (MiB) helpers' workspaces and the copies back must fit;
        None: the parent sandbox's ``limits.disk_mb``."""
        self.started = 0
        self.calls = 0
        self.parent: Any = None
        """The parent's ``AgentLoop`` (``attach``): its bus, hooks and budgets."""
        self.bus: EventBus | None = None
        self._call_id = ""
        self._step = 0

    def attach(self, loop: Any) -> None:
        """Serve the parent ``loop``: children's events go out on its bus, its tool hooks
        apply to their calls too. The tool interface does not pass a call's id, so the id
        of the running ``delegate`` call is taken from the bus: a loop runs its tool calls
        one at a time, each announced just before it runs."""
        self.parent, self.bus = loop, loop.bus
        loop.bus.subscribe(self._note_call)

    def count_earlier(self, notebook: Any) -> None:
        """Continue the numbering of a resumed session's helpers (labels stay unique)."""
        from ..record.helper_sections import HEADING

        metas = [c.metadata.get("codeagent", {}) for c in notebook.cells]
        heads = [m for m in metas if m.get("kind") == HEADING and m.get("child")]
        self.started = len(heads)
        self.calls = len({m.get("parent_tool_call_id") for m in heads})

    def _note_call(self, event: ev.Event) -> None:
        if isinstance(event, ev.ToolCallStarted) and event.name == "delegate":
            self._call_id, self._step = event.tool_call_id, event.step

    async def __call__(self, arguments: dict[str, Any]) -> ToolOutcome:
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
        seed = self.store.capture(self.workdir, session=self.session).id
        t0 = time.monotonic()
        call_id = self._call_id
        config = carve(self.parent, len(tasks), self.settings.child_max_steps)
        children = [
            self._child(f"{self.calls}-{i + 1}", t, seed, t0, call_id, config)
            for i, t in enumerate(tasks)
        ]
        results = await asyncio.gather(*children)
        ok = all(r["status"] == "answered" for r in results)
        text = json.dumps({"helpers": results}, indent=1)
        return ToolOutcome("ok" if ok else "error", text)

    async def _child(
        self, label: str, task: str, seed: str, t0: float, call_id: str, config: AgentConfig
    ) -> dict[str, Any]:
        """Run one child to its end; every failure but a cancel is its result, not an
        exception, so one child that cannot start never leaves its siblings running alone."""
        tmp = Path(tempfile.mkdtemp(prefix="codeagent-child-"))
        ws = tmp / "ws"
        ws.mkdir()
        result: dict[str, Any] = {"helper": label, "task": task}
        result["budget"] = {"max_steps": config.max_steps, "max_tokens": config.max_tokens}
        try:
            copy_out(self.store, seed, ws, self._budget())
            began = time.monotonic() - t0
            finished = await self._run(label, task, ws, call_id, config)
            result |= {"status": finished.status, "answer": finished.answer or finished.reason}
            result |= {"steps": finished.steps, "usage": finished.usage}
            result |= {"started_s": round(began, 3), "finished_s": round(time.monotonic() - t0, 3)}
            try:
                result["files"] = copy_back(
                    self.store, ws, seed, self.workdir, label, self._budget(), self.session
                )
            except DiskBudgetError as e:
                result |= {"files": [], "files_not_copied": str(e)}
            result["notebook"] = f"delegate-{label}.ipynb"
        except Exception as exc:
            log.warning("helper %s failed: %s", label, exc)
            result |= {"status": "error", "answer": f"the helper could not run: {exc}"}
        finally:
            with contextlib.suppress(OSError):
                shutil.rmtree(tmp)
        return result

    async def _run(
        self, label: str, task: str, ws: Path, call_id: str, config: AgentConfig
    ) -> ev.RunFinished:
        from ..core.assembly import build_agent
        from ..record.recorder import NotebookRecorder

        async with self.sandbox_factory(ws) as sandbox:
            recorder = NotebookRecorder(self.notebooks / f"delegate-{label}.ipynb")
            bus = EventBus([recorder.emit, self._forward(call_id, label, task)], keep=False)
            loop = build_agent(self.model, sandbox, bus, config)
            loop.runner.hooks = getattr(getattr(self.parent, "runner", None), "hooks", None)
            try:
                return await loop.run(task)
            finally:
                self._charge(loop.usage)

    def _charge(self, usage: Any) -> None:
        """Count a child's tokens against the parent (also when it was cancelled): the
        parent's token budget and totals include them, announced as one usage update."""
        if self.parent is None or not (usage.prompt_tokens or usage.completion_tokens):
            return
        fields = self.parent.usage.add(usage)
        self.parent.bus.publish(ev.UsageUpdated, step=self._step, **fields)

    def _forward(self, call_id: str, label: str, task: str) -> Any:
        """A subscriber of a child's bus that re-publishes each event on the parent's."""

        def forward(event: ev.Event) -> None:
            if self.bus is not None:
                self.bus.publish(
                    ev.ChildEvent,
                    parent_tool_call_id=call_id,
                    child=label,
                    task=task,
                    event=event.to_dict(),
                )

        return forward

    def _budget(self) -> int | None:
        if self.disk_mb is not None:
            return self.disk_mb
        limits = getattr(getattr(self.parent, "sandbox", None), "limits", None)
        return getattr(limits, "disk_mb", None)


def offer_delegate(loop: Any, delegator: Delegator) -> Any:
    """A loop like ``loop`` (same model, sandbox, bus, settings, approver, context) whose
    tools include ``delegate``, served by ``delegator``. Build it before the loop runs."""
    from ..core.loop import AgentLoop

    tools = WithDelegate(loop.tools, delegator)
    offered = AgentLoop(
        loop.model,
        loop.sandbox,
        tools,
        loop.bus,
        loop.config,
        approver=loop.runner.approver,
        context=loop.context,
    )
    delegator.attach(offered)
    return offered


class WithDelegate:
    """A tool box plus ``delegate``: the standard tools are untouched, one is added."""

    def __init__(self, inner: Any, delegator: Delegator) -> None:
        self.inner = inner
        self.delegator = delegator

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    @property
    def names(self) -> set[str]:
        return set(self.inner.names) | {"delegate"}

    def schemas(self) -> list[dict[str, Any]]:
        return [*self.inner.schemas(), json.loads(json.dumps(SCHEMA))]

    async def call(self, name: str, arguments: dict[str, Any], **kw: Any) -> ToolOutcome:
        if name == "delegate":
            return await self.delegator(arguments)
        return await self.inner.call(name, arguments, **kw)
