"""``ToolSession``: one MCP client's calls into one sandbox, recorded like our sessions.

An outside agent takes the place of our model: each tool call it makes is published on
the session's bus as one step (the call as an assistant turn, then the call itself through
our ``ToolRunner`` and tools), so the recorder writes the same session notebook a run of
our agent writes: one run whose request names the client, a cell per call with its real
outputs, the calls as the transcript. That notebook replays (``codeagent replay``, also
``--model recorded``: the client's calls are its recorded turns), re-executes and resumes
like any other. Calls are run one at a time, in the order they arrive: a kernel runs one
cell at a time anyway, and the recording stays in the order things happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from .. import events as ev
from ..config import AgentConfig
from ..core.bus import EventBus
from ..core.outcome import ToolOutcome
from ..core.runner import ToolRunner
from ..core.toolset import ToolContext, Toolset, combine, describe
from .results import is_offered, offered

CLIENT_UNKNOWN = "an MCP client"
SAVE_DELAY_S = 0.25
"""The pause in an MCP session's calls after which its notebook is saved (``NotebookRecorder``'s
``save_delay``; two seconds after a call at the latest): the save and its signature come
after the reply, in the client's pause (its model thinking), and a burst of calls is saved
once."""
SETTLE_S = 0.01
"""How long after a call returns its ``ToolCallFinished`` waits before it is delivered.

The event's subscribers (the workspace snapshot, the recorder's cell, hooks, watchers)
take milliseconds, and the client is waiting for its reply meanwhile: the reply goes out
first, and the event follows in the client's pause. Nothing can come between: the next
call, the end of the session and a cancelled call deliver a pending event before they do
anything, so every subscriber still sees the calls in order, each finished before the next
starts, and the snapshot is of the workspace as the call left it."""


def sandbox_tools(sandbox: Any, workdir: Any, install: Toolset | None = None) -> list[Toolset]:
    """The toolsets an MCP session offers: the sandbox's own (every tool of them but our
    agent's plan, notebook-edit and helper tools), built as our agent's are built, and
    ``install_packages`` where the edge allows installs without asking (an MCP client has
    no approval card to answer)."""
    from ..tools import ToolBox

    return [ToolBox(sandbox, workdir), *([install] if install is not None else [])]


def client_label(info: Any) -> str:
    """``name version`` from an MCP ``Implementation`` (``clientInfo``), or a fallback."""
    name = str(getattr(info, "name", "") or "").strip()
    version = str(getattr(info, "version", "") or "").strip()
    if not name:
        return CLIENT_UNKNOWN
    return f"{name} {version}".strip()[:200]


async def _unguarded(awaitable: Awaitable[Any], interruptible: bool) -> Any:
    """The runner's guard: an MCP call is stopped by its client cancelling it."""
    return await awaitable


class ToolSession:
    """The tools of one sandbox, offered to one MCP client, every call recorded on ``bus``.

    ``tools`` are the sandbox's toolsets (the same ones our agent gets); ``hooks`` (a
    ``ToolHooks``) see every call as they see our agent's. ``on_activity`` is told when a
    call starts and ends (the server's idle reaper measures from there).
    """

    def __init__(
        self,
        tools: Toolset | list[Toolset],
        sandbox: Any,
        bus: EventBus,
        *,
        config: AgentConfig | None = None,
        hooks: Any = None,
        on_activity: Callable[[], None] | None = None,
    ) -> None:
        self.tools = combine(tools)
        self.sandbox = sandbox
        self.bus = bus
        self.config = config or AgentConfig()
        self.schemas = offered(self.tools)
        self.names = {s["function"]["name"] for s in self.schemas}
        self.runner = ToolRunner(
            self.tools,
            bus,
            _unguarded,
            approval=self.config.approval,
            approver=None,
            hooks=hooks,
        )
        self.on_activity = on_activity or (lambda: None)
        self.client = ""
        self.steps = 0
        self.busy = False
        self.ended = False
        self._started_at = 0.0
        self._lock = asyncio.Lock()
        self._unsettled: ev.ToolCallFinished | None = None
        self._settling: asyncio.TimerHandle | None = None

    def begin(self, client: str) -> None:
        """Start the recording's one run, naming the client (once; later calls no-op)."""
        if self.client:
            return
        self.client = client or CLIENT_UNKNOWN
        self._started_at = time.monotonic()
        sandbox = self.sandbox
        self.bus.publish(
            ev.RunStarted,
            prompt=f"MCP session of {self.client}",
            run_index=0,
            model=f"mcp client: {self.client}",
            base_url="",
            workdir=str(getattr(sandbox, "workdir", "") or ""),
            limits=sandbox.limits.to_dict() if sandbox is not None else {},
            enforcement=dict(getattr(sandbox, "enforcement", {}) or {}),
            config=self.config.to_dict(),
            preloaded=getattr(sandbox, "preloaded", None),
        )

    def _finished(
        self, outcome: ToolOutcome, step: int, call_id: str, name: str
    ) -> ev.ToolCallFinished:
        """The call's finished event, with its tool's traits (as the agent loop's)."""
        traits = describe(self.tools, name, None)[0]
        return ev.ToolCallFinished.from_outcome(
            outcome, step=step, tool_call_id=call_id, name=name, traits=traits
        )

    async def call(self, name: str, arguments: dict[str, Any], client: str = "") -> ToolOutcome:
        """Run one tool call; every failure is an outcome (``status`` says which)."""
        if self.ended:
            return ToolOutcome.refused("Error: this MCP session has ended; start a new one")
        self.begin(client)
        if name not in self.names or not is_offered(self.tools, name):
            available = ", ".join(sorted(self.names))
            return ToolOutcome.refused(f"Error: unknown tool {name!r}; available: {available}")
        async with self._lock:
            self.busy = True
            self.on_activity()
            try:
                return await self._step(name, arguments)
            finally:
                self.busy = False
                self.on_activity()

    async def _step(self, name: str, arguments: dict[str, Any]) -> ToolOutcome:
        self.settle()
        self.steps += 1
        step, call_id = self.steps, f"mcp_{self.steps}"
        call = {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}
        message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "type": "function", "function": call}],
        }
        self.bus.publish(ev.AssistantMessage, step=step, message=message)
        ctx = ToolContext(
            step=step,
            tool_call_id=call_id,
            config=self.config,
            steps_taken=step,
            publish=self.bus.publish,
        )
        try:
            outcome, _ = await self.runner.run(ctx, name, arguments)
        except asyncio.CancelledError:  # the client cancelled the call: stop the cell too
            interrupt = getattr(self.sandbox, "interrupt", None)
            if interrupt is not None:
                with contextlib.suppress(Exception):
                    await asyncio.shield(interrupt())
            outcome = ToolOutcome.failed("Not finished: the MCP client cancelled the call.")
            self.bus.deliver(self._finished(outcome, step, call_id, name))  # no reply to wait for
            raise
        # Held until the reply is on its way (``SETTLE_S``).
        self._unsettled = self._finished(outcome, step, call_id, name)
        self._settling = asyncio.get_running_loop().call_later(SETTLE_S, self.settle)
        return outcome

    def settle(self) -> None:
        """Deliver the last call's finished event now, if it is still held."""
        if self._settling is not None:
            self._settling.cancel()
            self._settling = None
        finished, self._unsettled = self._unsettled, None
        if finished is not None:
            self.bus.deliver(finished)

    def end(self, reason: str = "the MCP client left") -> None:
        """Close the recording's run: a closing note as its answer (once)."""
        if self.ended:
            return
        self.settle()
        self.ended = True
        if not self.client:
            return  # no call was made: nothing to record
        calls = f"{self.steps} tool call" + ("" if self.steps == 1 else "s")
        answer = f"MCP session of {self.client} ended ({reason}) after {calls}."
        final = {"role": "assistant", "content": answer}
        self.bus.publish(ev.AssistantMessage, step=self.steps + 1, message=final)
        self.bus.publish(
            ev.RunFinished,
            status=ev.ANSWERED,
            reason=reason,
            answer=answer,
            steps=self.steps,
            duration_s=round(time.monotonic() - self._started_at, 3),
            usage={},
        )
