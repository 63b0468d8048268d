"""The agent loop: model → tool calls → sandbox → results → model, until an answer or a budget.

This module is the core of the product and knows only the ports (``ports.py``,
``toolset.py``): it never imports openai, jupyter_client, tornado or ipywidgets, so the same
loop serves the CLI, the server extension and offline replay. Everything it does is
published on the session's ``EventBus``; one tool call is the ``ToolRunner``'s job, an early
stop the ``StopSignal``'s. A loop is built whole (``assembly.build_agent``): history, run
index, tools and hooks are inputs, never set afterwards.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from typing import Any

from .. import events as ev
from ..config import AgentConfig, compose_prompt
from ..errors import ModelError, ReplayError
from .budget import bounded, budget_line, images_message
from .bus import EventBus
from .call_ids import CallIds, duplicate_text
from .outcome import ToolOutcome
from .ports import EventSink, Model, SandboxPort, ToolHooks
from .runner import Approver, ToolRunner
from .starting import HeadStart, StartingSandbox
from .stopping import RunStopped, StopSignal
from .toolset import ToolContext, Toolset, combine, describe, prompt_lines
from .transcript import answer_open_calls
from .usage import Totals, clean_message, empty_reply_error, is_empty

log = logging.getLogger(__name__)


class AgentLoop:
    """A conversation with a model that acts through tools in one sandbox.

    ``run(prompt)`` may be called again for a follow-up: history, sandbox state and event
    numbering carry on. Events go to ``bus`` (a session's ``EventBus``, or a list of sinks
    for a bus of its own). Requests stay cache-friendly: the system prompt and tool schemas
    are fixed at construction and the history is only ever appended to. ``history`` (the
    earlier conversation, no system message) and ``run_index`` continue a resumed session.
    """

    def __init__(
        self,
        model: Model,
        sandbox: SandboxPort | None,
        tools: Toolset | Sequence[Toolset],
        bus: EventBus | Sequence[EventSink],
        config: AgentConfig | None = None,
        *,
        approver: Approver | None = None,
        context: str = "",
        hooks: ToolHooks | None = None,
        history: Sequence[dict[str, Any]] = (),
        run_index: int = 0,
    ) -> None:
        self.model = model
        self.sandbox = sandbox
        self.tools = combine(tools)
        self.bus = bus if isinstance(bus, EventBus) else EventBus([s.emit for s in bus], keep=False)
        self.config = config or AgentConfig()
        self.context = context
        prompt = self.config.system_prompt or compose_prompt(prompt_lines(self.tools))
        if self.config.instructions:
            prompt = f"{prompt}\n{self.config.instructions}"
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": prompt},
            *(dict(m) for m in history),
        ]
        self.usage = Totals()
        self._call_ids = CallIds(self.messages)
        """Tool call ids used in the session: one reused is refused (``call_ids``)."""
        self.running = False
        self.run_index = run_index
        """Runs before this one (0: the next run is the session's first)."""
        self._schemas = self.tools.schemas()
        self._steps_taken = 0
        self._started = 0.0
        self._images: list[dict[str, Any]] = []
        """``image_url`` parts of the current step's tool results, for a seeing model."""
        self.stop = StopSignal(sandbox.interrupt if sandbox is not None else None)
        self.runner = ToolRunner(
            self.tools,
            self.bus,
            self.stop.guard,
            approval=self.config.approval,
            approver=approver,
            hooks=hooks,
        )

    @property
    def steps_taken(self) -> int:
        """Model calls of the current (or last) run so far: what its step budget has used."""
        return self._steps_taken

    def cancel(self, reason: str = "stopped by the user") -> None:
        """Ask the running run to stop: the model request is dropped, a running cell interrupted."""
        self.stop.request(ev.CANCELLED, reason)

    async def run(self, prompt: str, *, title: str = "") -> ev.RunFinished:
        """Run one request to its end and return the ``RunFinished`` event (also published).

        ``title`` is how the request reads to people (``RunStarted.title``); the model gets
        ``prompt``.

        With a sandbox that is still starting (``StartingSandbox``), the first model request
        goes out at once and the run begins (``RunStarted``) when the sandbox is ready. If it
        cannot start, its error is raised and nothing is published; a stop while it starts
        raises ``RunStopped``: no run began.
        """
        if self.running:
            raise RuntimeError("a run is already in progress")
        self.running = True
        self.stop.reset()
        started = self._started = time.monotonic()
        wall = self.config.max_wall_s
        deadline = asyncio.get_running_loop().call_later(
            wall, self.stop.request, ev.MAX_WALL_TIME, f"wall-time budget of {wall:g} s used up"
        )
        first = self.run_index == 0 and self.context
        content = f"{self.context}\n\n## Request\n{prompt}" if first else prompt
        self._steps_taken = 0
        content = f"{budget_line(self.config, 0, 0.0, self.usage.total)}\n\n{content}"
        answer_open_calls(self.messages)  # the last run's task was cancelled inside a call
        self.messages.append({"role": "user", "content": content})
        try:
            head = await self._head_start()
        except BaseException:
            self.messages.pop()
            deadline.cancel()
            self.running = False
            raise
        self.bus.publish(
            ev.RunStarted,
            prompt=prompt,
            run_index=self.run_index,
            title=title,
            model=getattr(self.model, "name", ""),
            base_url=str(getattr(self.model, "base_url", "") or ""),
            workdir=str(getattr(self.sandbox, "workdir", "") or ""),
            limits=self.sandbox.limits.to_dict() if self.sandbox is not None else {},
            enforcement=dict(getattr(self.sandbox, "enforcement", {}) or {}),
            config=self.config.to_dict(),
            preloaded=getattr(self.sandbox, "preloaded", None),
        )
        self.run_index += 1
        answer: str | None = None
        try:
            answer = await self._steps(head)
            status, reason = ev.ANSWERED, "the model gave its answer"
        except RunStopped as stop:
            status, reason = stop.status, stop.reason
        except (ModelError, ReplayError) as exc:
            status, reason = ev.MODEL_ERROR, str(exc)
        except asyncio.CancelledError:
            self._finish(ev.CANCELLED, "the run's task was cancelled", None, started)
            raise
        except Exception as exc:  # a bug of ours: record it rather than lose the session
            log.exception("agent run failed")
            status, reason = ev.ERROR, f"internal error: {type(exc).__name__}: {exc}"
        finally:
            if head is not None and not head.done():
                head.cancel()
            deadline.cancel()
            self.running = False
        return self._finish(status, reason, answer, started)

    async def _head_start(self) -> HeadStart | None:
        """While the sandbox starts: the first model request, sent now (its events held
        until the run has begun), and the wait for the sandbox. None when it is ready."""
        sandbox = self.sandbox
        if not isinstance(sandbox, StartingSandbox) or sandbox.started:
            return None
        head = None
        if self._within_budget():
            head = HeadStart(self.bus, lambda publish: self._request(1, publish))
        try:
            await self.stop.guard(sandbox.ready(), False)
        except RunStopped as stop:
            if head is not None:
                head.cancel()
            if stop.status == ev.CANCELLED:
                raise
            # A budget (the wall time) ran out while the sandbox started: the run still
            # begins, so that it is recorded, and ends on that budget at its first check.
            await sandbox.ready()
            return None
        except BaseException:
            if head is not None:
                head.cancel()
            raise
        return head

    def _within_budget(self) -> bool:
        cfg = self.config
        return cfg.max_steps > 0 and self.usage.total < cfg.max_tokens

    def _finish(
        self, status: str, reason: str, answer: str | None, started: float
    ) -> ev.RunFinished:
        return self.bus.publish(
            ev.RunFinished,
            status=status,
            reason=reason,
            answer=answer,
            steps=self._steps_taken,
            duration_s=round(time.monotonic() - started, 3),
            usage=self.usage.as_dict(),
        )

    async def _steps(self, head: HeadStart | None = None) -> str:
        """Query the model and execute its tool calls until it answers; budgets checked first
        (the head start's request was sent within them)."""
        cfg = self.config
        malformed = 0
        while True:
            self.stop.check()
            if self._steps_taken >= cfg.max_steps:
                raise RunStopped(
                    ev.MAX_STEPS, f"step budget of {cfg.max_steps} model calls used up"
                )
            if self.usage.total >= cfg.max_tokens:
                raise RunStopped(ev.MAX_TOKENS, f"token budget of {cfg.max_tokens} tokens used up")
            self._steps_taken += 1
            step = self._steps_taken
            message = await self._query(step, head)
            head = None
            calls = message.get("tool_calls") or []
            if not calls:
                return message.get("content") or ""
            for index, call in enumerate(calls):
                try:
                    self.stop.check()
                    ok = await self._call_tool(step, call)
                except RunStopped:  # every tool call needs exactly one answer, even unrun ones
                    for unrun in calls[index:]:
                        self._tool_message(str(unrun.get("id", "")), "Not run: stopped.")
                    raise
                malformed = 0 if ok else malformed + 1
            self._close_step()
            if malformed >= cfg.max_malformed:
                raise RunStopped(
                    ev.MALFORMED, f"{malformed} malformed tool calls in a row; giving up"
                )

    def _request(self, step: int, publish: Any) -> Any:
        """The model request of ``step``; its text and retries announced through ``publish``."""

        def on_text(text: str) -> None:
            publish(ev.TextDelta, step=step, text=text)

        def on_retry(attempt: int, wait_s: float, reason: str) -> None:
            if attempt == 0:  # the adapter's way of saying it changed how it asks: a note
                publish(ev.ModelNote, step=step, text=reason)
                return
            publish(ev.ModelRetry, step=step, attempt=attempt, wait_s=wait_s, reason=reason)

        return self.model.complete(self.messages, self._schemas, on_text=on_text, on_retry=on_retry)

    async def _query(self, step: int, head: HeadStart | None = None) -> dict[str, Any]:
        if head is not None:
            reply = await self.stop.guard(head.reply(), False)
        else:
            reply = await self.stop.guard(self._request(step, self.bus.publish), False)
        usage = self.usage.add(reply.usage)
        self.bus.publish(ev.UsageUpdated, step=step, **usage)
        message = clean_message(reply.message)
        if is_empty(message):  # an empty answer is no answer: never "answered"
            raise empty_reply_error(self.model, reply)
        self.messages.append(message)
        self.bus.publish(ev.AssistantMessage, step=step, message=message)
        return message

    def _close_step(self) -> None:
        """After a step's tool results: the budget left, on its last tool message (not yet
        sent, so no request's prefix changes), then the images for a seeing model."""
        elapsed = time.monotonic() - self._started
        line = budget_line(self.config, self._steps_taken, elapsed, self.usage.total)
        last = self.messages[-1]
        last["content"] = f"{last['content']}\n{line}"
        images, self._images = self._images, []
        message = images_message(bounded(images), len(images))
        if message is not None:
            self.messages.append(message)

    def _tool_message(self, call_id: str, content: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})

    async def _call_tool(self, step: int, call: dict[str, Any]) -> bool:
        """Run one tool call and append its one tool message; False when it was malformed."""
        call_id = str(call.get("id", ""))
        function = call.get("function") or {}
        name = str(function.get("name", ""))
        ctx = ToolContext(
            step=step,
            tool_call_id=call_id,
            config=self.config,
            steps_taken=self._steps_taken,
            tokens_used=self.usage.total,
            publish=self.bus.publish,
            charge=lambda usage: self._charge(step, usage),
        )
        if self._call_ids.claim(call_id):
            outcome, well_formed = await self.runner.run(ctx, name, function.get("arguments"))
        else:  # decisions are keyed by the id: a reused one must never reach an approval
            outcome, well_formed = ToolOutcome.refused(duplicate_text(call_id)), False
        if outcome.plan is not None:
            self.bus.publish(ev.PlanUpdated, steps=outcome.plan)
        self._tool_message(call_id, outcome.text)
        self._images.extend(outcome.images)
        finished = ev.ToolCallFinished.from_outcome
        traits = describe(self.tools, name, None)[0]
        self.bus.deliver(
            finished(outcome, step=step, tool_call_id=call_id, name=name, traits=traits)
        )
        if outcome.over_budget is not None:  # the workspace is over its disk budget
            self.stop.request(ev.ERROR, outcome.over_budget.reason)
        return well_formed

    def _charge(self, step: int, usage: Any) -> None:
        """Tokens a tool spent for the session (its helpers): counted and announced."""
        if usage.prompt_tokens or usage.completion_tokens:
            self.bus.publish(ev.UsageUpdated, step=step, **self.usage.add(usage))
