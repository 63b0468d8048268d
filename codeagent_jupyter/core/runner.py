"""The tool runner: one tool call from the model's message to its outcome.

parse the arguments → the hooks' ``before`` → approval (tools under the ``ask`` policy) →
the tool, told its ``ToolContext`` → the hooks' ``after`` → one ``ToolOutcome``. Every way a
call can go wrong (arguments that are not JSON, an unknown tool, a refusal, a failure) becomes
an outcome the model is shown, never an exception; only a stop of the run (``Guard`` raising)
passes through, and the loop answers the calls left.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar

from .. import events as ev
from ..errors import CodeAgentError, ToolArgumentError, ToolError
from .bus import EventBus
from .outcome import ToolOutcome
from .ports import OutputCallback, ToolCall, ToolHooks
from .stopping import RunStopped
from .toolset import ToolContext, Toolset, describe

log = logging.getLogger(__name__)
T = TypeVar("T")

Approver = Callable[[str, str, Any], Awaitable["bool | tuple[bool, str]"]]
"""``(tool_call_id, name, arguments) -> approved``, or ``(approved, remember)`` where the
decision stands for more than this call (``"session"``); awaited for tools under ``ask``."""

Guard = Callable[[Awaitable[Any], bool], Awaitable[Any]]
"""``(awaitable, interruptible) -> its result``, or raises when the run is stopped first."""


def parse_arguments(name: str, raw: Any) -> tuple[Any, ToolOutcome | None]:
    """Decode a tool call's arguments; on failure, the refusal the model is shown instead.

    Raw newlines and tabs inside JSON strings are accepted (``strict=False``): local models
    often write code that way, and the intent is unambiguous.
    """
    try:
        arguments = json.loads(raw or "{}", strict=False) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        return raw, ToolOutcome.refused(
            f"Error: the arguments for {name!r} are not valid JSON ({exc.msg} at position "
            f"{exc.pos}). Call the tool again with a JSON object matching its schema."
        )
    if not isinstance(arguments, dict):
        return raw, ToolOutcome.refused(f"Error: arguments for {name!r} must be a JSON object")
    return arguments, None


class ToolRunner:
    """Runs the model's tool calls against ``tools``, announcing each step on ``bus``.

    ``hooks`` (a ``ToolHooks``, e.g. ``hooks.HookChain``) see every well-formed call before
    and after it runs; given at construction, like everything a runner works with.
    """

    def __init__(
        self,
        tools: Toolset,
        bus: EventBus,
        guard: Guard,
        *,
        approval: dict[str, str],
        approver: Approver | None,
        hooks: ToolHooks | None = None,
    ) -> None:
        self.tools = tools
        self.bus = bus
        self.guard = guard
        self.approval = approval
        self.approver = approver
        self.hooks = hooks

    async def run(self, ctx: ToolContext, name: str, raw: Any) -> tuple[ToolOutcome, bool]:
        """The call's outcome, and whether the call was well formed (for the malformed count).

        ``ctx`` says which step and call this is; the runner adds the live-output callback.
        """
        arguments, refused = parse_arguments(name, raw)
        if refused is not None:
            return refused, False
        ctx = replace(
            ctx,
            on_output=self._output_to_bus(ctx.tool_call_id),
            hooks=self.hooks,
            approve=self._asker(ctx.step, ctx.tool_call_id),
        )
        if self.hooks is None:
            return await self._checked(ctx, name, arguments)
        call = self._hooked_call(ctx, name, arguments)
        verdict = await self.hooks.before(call)
        if verdict.denied:
            outcome, well_formed = verdict.outcome(), True
        else:
            call = self._hooked_call(ctx, name, verdict.arguments)
            outcome, well_formed = await self._checked(ctx, name, verdict.arguments)
        return await self.hooks.after(call, outcome), well_formed

    def _hooked_call(self, ctx: ToolContext, name: str, arguments: dict[str, Any]) -> ToolCall:
        """The call as hooks see it: with the tool's traits and the code it would run."""
        assert self.hooks is not None
        traits, code, _ = describe(self.tools, name, arguments)
        session = self.hooks.session_id
        return ToolCall(session, ctx.step, ctx.tool_call_id, name, arguments, traits, code)

    def _output_to_bus(self, call_id: str) -> OutputCallback:
        def on_output(output: dict[str, Any]) -> None:
            self.bus.publish(ev.CellOutput, tool_call_id=call_id, output=output)

        return on_output

    async def _checked(
        self, ctx: ToolContext, name: str, arguments: Any
    ) -> tuple[ToolOutcome, bool]:
        """Approval (tools under ``ask``), then the call itself."""
        step, call_id = ctx.step, ctx.tool_call_id
        traits, code, cell = describe(self.tools, name, arguments)
        if self.approval.get(name, traits.approval) == "ask" and not await self._approved(
            step, call_id, name, arguments
        ):
            return ToolOutcome.denied(), True
        self.bus.publish(
            ev.ToolCallStarted,
            step=step,
            tool_call_id=call_id,
            name=name,
            arguments=arguments,
            code=code,
            cell_source=cell,
            traits=traits,
        )
        try:
            outcome = await self.guard(self.tools.call(name, arguments, ctx), True)
        except RunStopped:
            raise
        except ToolArgumentError as exc:
            return ToolOutcome.refused(f"Error: {exc}"), False
        except ToolError as exc:
            return ToolOutcome.refused(f"Error: {exc}"), True
        except CodeAgentError as exc:
            return ToolOutcome.failed(f"Error: {exc}"), True
        except Exception as exc:
            log.exception("tool %s failed", name)
            return ToolOutcome.failed(
                f"Error: tool {name} failed: {type(exc).__name__}: {exc}"
            ), True
        outcome.text = outcome.text or "(no output)"
        return outcome, True

    def _asker(self, step: int, call_id: str) -> Callable[[str, Any], Awaitable[bool]]:
        """What a tool calls to ask for approval of its call with details it worked out."""

        async def approve(name: str, details: Any) -> bool:
            return await self._approved(step, call_id, name, details)

        return approve

    async def _approved(self, step: int, call_id: str, name: str, arguments: Any) -> bool:
        self.bus.publish(
            ev.ApprovalRequested, step=step, tool_call_id=call_id, name=name, arguments=arguments
        )
        approved, remember = False, ""
        if self.approver is not None:
            answer = await self.guard(self.approver(call_id, name, arguments), False)
            approved, remember = answer if isinstance(answer, tuple) else (bool(answer), "")
        self.bus.publish(
            ev.ApprovalDecided, tool_call_id=call_id, approved=approved, remember=remember
        )
        return approved
