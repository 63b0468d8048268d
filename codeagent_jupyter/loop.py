"""The agent loop: model → tool calls → sandbox → results → model, until an answer or a budget.

This module is the core of the product and knows only the ports in ``protocols.py``: it never
imports openai, jupyter_client, tornado or ipywidgets, so the same loop serves the CLI, the
server extension and offline replay. Everything it does is announced as an event.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from . import events as ev
from .config import AgentConfig
from .errors import CodeAgentError, ModelError, ReplayError, ToolArgumentError, ToolError
from .protocols import EventSink, Model, Sandbox
from .turns import Outcome, Totals, clean_message, parse_arguments

log = logging.getLogger(__name__)
T = TypeVar("T")

Approver = Callable[[str, str, Any], Awaitable[bool]]
"""``(tool_call_id, name, arguments) -> approved``; awaited for tools under the ``ask`` policy."""

_DISK_BUDGET = "workspace disk budget of"
"""A sandbox note that starts with this ends the run: the workspace is over its disk budget."""

CANCEL_GRACE_S = 5.0
"""How long a stopped cell may take to come back with its partial output after an interrupt."""


class _Stop(Exception):
    """Ends a run cleanly; carries the final status and a sentence for people."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class AgentLoop:
    """A conversation with a model that acts through tools in one sandbox.

    ``run(prompt)`` may be called again for a follow-up: history, sandbox state and event
    numbering carry on. Requests stay cache-friendly: the system prompt and tool schemas are
    fixed at construction and the history is only ever appended to.
    """

    def __init__(
        self,
        model: Model,
        sandbox: Sandbox | None,
        tools: Any,
        sinks: Sequence[EventSink],
        config: AgentConfig | None = None,
        *,
        approver: Approver | None = None,
        context: str = "",
        first_seq: int = 0,
    ) -> None:
        self.model = model
        self.sandbox = sandbox
        self.tools = tools
        self.sinks = list(sinks)
        self.config = config or AgentConfig()
        self.approver = approver
        self.context = context
        self.next_seq = first_seq
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": self.config.system_prompt}
        ]
        self.usage = Totals()
        self.running = False
        self.run_index = 0
        self._schemas = tools.schemas()
        self._stop_reason: tuple[str, str] | None = None
        self._stop_event: asyncio.Event | None = None
        self._steps_taken = 0

    # -- events ---------------------------------------------------------------------------

    def emit(self, cls: type[ev.Event], **fields: Any) -> ev.Event:
        """Number an event and hand it to every sink; a failing sink never stops the run."""
        event = cls(seq=self.next_seq, **fields)
        self.next_seq += 1
        for sink in self.sinks:
            try:
                sink.emit(event)
            except Exception:
                log.exception("event sink %r failed on %s", sink, event.type)
        return event

    # -- control --------------------------------------------------------------------------

    def cancel(self, reason: str = "stopped by the user") -> None:
        """Ask the running run to stop: the model request is dropped, a running cell interrupted."""
        self._request_stop(ev.CANCELLED, reason)

    def _request_stop(self, status: str, reason: str) -> None:
        if self._stop_reason is None:
            self._stop_reason = (status, reason)
        if self._stop_event is not None:
            self._stop_event.set()

    async def _until_stopped(self, coro: Awaitable[T], *, interruptible: bool) -> T:
        """Await ``coro`` unless a stop is requested first.

        A model request is simply cancelled; a cell is interrupted instead, so that it comes
        back with its partial output (which is recorded) rather than vanishing.
        """
        assert self._stop_event is not None
        task = asyncio.ensure_future(coro)
        stopper = asyncio.ensure_future(self._stop_event.wait())
        try:
            await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                return task.result()
            if interruptible and self.sandbox is not None:
                await self.sandbox.interrupt()
                done, _ = await asyncio.wait({task}, timeout=CANCEL_GRACE_S)
                if done:
                    return task.result()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            status, reason = self._stop_reason or (ev.CANCELLED, "stopped")
            raise _Stop(status, reason)
        finally:
            stopper.cancel()

    # -- the run --------------------------------------------------------------------------

    async def run(self, prompt: str) -> ev.RunFinished:
        """Run one request to its end and return the ``RunFinished`` event (also emitted)."""
        if self.running:
            raise RuntimeError("a run is already in progress")
        self.running = True
        self._stop_reason = None
        self._stop_event = asyncio.Event()
        started = time.monotonic()
        deadline = asyncio.get_running_loop().call_later(
            self.config.max_wall_s,
            self._request_stop,
            ev.MAX_WALL_TIME,
            f"wall-time budget of {self.config.max_wall_s:g} s used up",
        )
        self.emit(
            ev.RunStarted,
            prompt=prompt,
            run_index=self.run_index,
            model=getattr(self.model, "name", ""),
            base_url=str(getattr(self.model, "base_url", "") or ""),
            workdir=str(getattr(self.sandbox, "workdir", "") or ""),
            limits=self.sandbox.limits.to_dict() if self.sandbox is not None else {},
            enforcement=dict(getattr(self.sandbox, "enforcement", {}) or {}),
            config=self.config.to_dict(),
        )
        content = f"{self.context}\n\n## Request\n{prompt}" if self.context else prompt
        if self.run_index > 0:
            content = prompt
        self.messages.append({"role": "user", "content": content})
        self.run_index += 1
        answer: str | None = None
        try:
            answer = await self._steps()
            status, reason = ev.ANSWERED, "the model gave its answer"
        except _Stop as stop:
            status, reason = stop.status, stop.reason
        except (ModelError, ReplayError) as exc:
            status, reason = ev.MODEL_ERROR, str(exc)
        except asyncio.CancelledError:
            self._finish(
                ev.CANCELLED, "the run's task was cancelled", None, self._steps_taken, started
            )
            self.running = False
            deadline.cancel()
            raise
        except Exception as exc:  # a bug of ours: record it rather than lose the session
            log.exception("agent run failed")
            status, reason = ev.ERROR, f"internal error: {type(exc).__name__}: {exc}"
        finally:
            deadline.cancel()
        self.running = False
        return self._finish(status, reason, answer, self._steps_taken, started)

    def _finish(
        self, status: str, reason: str, answer: str | None, steps: int, started: float
    ) -> ev.RunFinished:
        finished = self.emit(
            ev.RunFinished,
            status=status,
            reason=reason,
            answer=answer,
            steps=steps,
            duration_s=round(time.monotonic() - started, 3),
            usage=self.usage.as_dict(),
        )
        assert isinstance(finished, ev.RunFinished)
        return finished

    async def _steps(self) -> str:
        """Query the model and execute its tool calls until it answers; budgets checked first."""
        cfg = self.config
        self._steps_taken = 0
        malformed = 0
        while True:
            if self._stop_reason is not None:
                raise _Stop(*self._stop_reason)
            if self._steps_taken >= cfg.max_steps:
                raise _Stop(ev.MAX_STEPS, f"step budget of {cfg.max_steps} model calls used up")
            if self.usage.total >= cfg.max_tokens:
                raise _Stop(ev.MAX_TOKENS, f"token budget of {cfg.max_tokens} tokens used up")
            self._steps_taken += 1
            step = self._steps_taken
            message = await self._query(step)
            calls = message.get("tool_calls") or []
            if not calls:
                answer = message.get("content") or ""
                if not str(answer).strip():  # an empty answer is no answer: never "answered"
                    raise ModelError("the model's reply had no text and no tool call")
                return answer
            for index, call in enumerate(calls):
                if self._stop_reason is not None:
                    self._answer_unrun(calls[index:])
                    raise _Stop(*self._stop_reason)
                ok = await self._call_tool(step, call, calls[index + 1 :])
                malformed = 0 if ok else malformed + 1
            if malformed >= cfg.max_malformed:
                raise _Stop(ev.MALFORMED, f"{malformed} malformed tool calls in a row; giving up")

    async def _query(self, step: int) -> dict[str, Any]:
        def on_text(text: str) -> None:
            self.emit(ev.TextDelta, step=step, text=text)

        def on_retry(attempt: int, wait_s: float, reason: str) -> None:
            self.emit(ev.ModelRetry, step=step, attempt=attempt, wait_s=wait_s, reason=reason)

        reply = await self._until_stopped(
            self.model.complete(self.messages, self._schemas, on_text=on_text, on_retry=on_retry),
            interruptible=False,
        )
        self.usage.prompt_tokens += reply.usage.prompt_tokens
        self.usage.completion_tokens += reply.usage.completion_tokens
        self.usage.estimated = self.usage.estimated or reply.usage.estimated
        self.emit(
            ev.UsageUpdated,
            step=step,
            prompt_tokens=reply.usage.prompt_tokens,
            completion_tokens=reply.usage.completion_tokens,
            estimated=reply.usage.estimated,
            total_prompt_tokens=self.usage.prompt_tokens,
            total_completion_tokens=self.usage.completion_tokens,
            total_estimated=self.usage.estimated,
        )
        message = clean_message(reply.message)
        self.messages.append(message)
        self.emit(ev.AssistantMessage, step=step, message=message)
        return message

    def _answer_unrun(self, calls: list[dict[str, Any]]) -> None:
        """Every tool call needs exactly one answer, even those a stop kept from running."""
        for call in calls:
            self.messages.append(
                {"role": "tool", "tool_call_id": call.get("id", ""), "content": "Not run: stopped."}
            )

    async def _call_tool(self, step: int, call: dict[str, Any], rest: list[dict[str, Any]]) -> bool:
        """Run one tool call and append its one tool message; False when the call was malformed."""
        call_id = str(call.get("id", ""))
        function = call.get("function") or {}
        name = str(function.get("name", ""))
        raw = function.get("arguments") or "{}"
        arguments, outcome = parse_arguments(name, raw)
        well_formed = outcome is None
        if outcome is None:
            outcome, well_formed = await self._approved_call(step, call_id, name, arguments, rest)
        plan = getattr(outcome.result, "plan", None)
        if plan is not None:
            self.emit(ev.PlanUpdated, steps=plan)
        text = outcome.text
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})
        result = outcome.result
        self.emit(
            ev.ToolCallFinished,
            step=step,
            tool_call_id=call_id,
            name=name,
            status=outcome.status,
            result=text,
            code=result.code if result else None,
            outputs=list(result.outputs) if result else [],
            execution_count=result.execution_count if result else None,
            duration_s=round(result.duration_s, 3) if result else 0.0,
            note=result.note if result else "",
        )
        note = str(getattr(result, "note", "") or "")
        if _DISK_BUDGET in note:
            self._request_stop(ev.ERROR, next(p for p in note.split("; ") if _DISK_BUDGET in p))
        return well_formed

    async def _approved_call(
        self, step: int, call_id: str, name: str, arguments: dict[str, Any], rest: list
    ) -> tuple[Outcome, bool]:
        if self.config.approval.get(name) == "ask":
            self.emit(
                ev.ApprovalRequested,
                step=step,
                tool_call_id=call_id,
                name=name,
                arguments=arguments,
            )
            if self.approver is None:
                approved = False
            else:
                try:
                    approved = await self._until_stopped(
                        self.approver(call_id, name, arguments), interruptible=False
                    )
                except _Stop:
                    self.messages.append(
                        {"role": "tool", "tool_call_id": call_id, "content": "Not run: stopped."}
                    )
                    self._answer_unrun(rest)
                    raise
            self.emit(ev.ApprovalDecided, tool_call_id=call_id, approved=approved)
            if not approved:
                return Outcome(
                    "denied",
                    "The user denied this tool call; do not retry it "
                    "unchanged. Ask or choose another way.",
                ), True
        self.emit(
            ev.ToolCallStarted, step=step, tool_call_id=call_id, name=name, arguments=arguments
        )

        def on_output(output: dict[str, Any]) -> None:
            self.emit(ev.CellOutput, tool_call_id=call_id, output=output)

        try:
            result = await self._until_stopped(
                self.tools.call(name, arguments, on_output=on_output), interruptible=True
            )
        except _Stop:
            self.messages.append(
                {"role": "tool", "tool_call_id": call_id, "content": "Not run: stopped."}
            )
            self._answer_unrun(rest)
            raise
        except ToolArgumentError as exc:
            return Outcome.refused(f"Error: {exc}"), False
        except ToolError as exc:
            return Outcome.refused(f"Error: {exc}"), True
        except CodeAgentError as exc:
            return Outcome("error", f"Error: {exc}"), True
        except Exception as exc:
            log.exception("tool %s failed", name)
            return Outcome("error", f"Error: tool {name} failed: {type(exc).__name__}: {exc}"), True
        return Outcome.from_result(result), True
