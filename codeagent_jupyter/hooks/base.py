"""Tool hooks: plugins that see, and may stop or change, every tool call of a session.

A hook is an object with any of ``before_tool(call)``, ``after_tool(call, outcome)``,
``on_session_start(info)`` and ``on_session_end(info)`` (plain or ``async`` methods). Hooks
come from the entry-point group ``codeagent_jupyter.hooks`` (each entry a factory called with
the hook's options) and are enabled by name in the configuration; ``policy`` and ``audit``
ship with the package.

What ``before_tool`` may return: ``None`` or ``Allow()`` (go on), ``Deny(reason)`` (the call
does not run; the model is told, exactly as for a user's denial, with the reason), or
``Modify(arguments)`` (the call runs with these arguments instead). ``after_tool`` may return
a replacement ``ToolOutcome``. Each call of a hook has a time limit; a hook that raises, times
out or returns something else *denies* the call (fails closed) and is logged.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from ..core.outcome import DENIED_TEXT, ToolOutcome
from ..core.ports import ToolCall
from ..errors import ConfigError

log = logging.getLogger(__name__)

GROUP = "codeagent_jupyter.hooks"
"""The entry-point group hooks are discovered in."""
BUILTIN = {
    "policy": "codeagent_jupyter.hooks.policy:PolicyHook",
    "audit": "codeagent_jupyter.hooks.audit:AuditHook",
}
"""The shipped hooks, found even where the package metadata is not installed."""


@dataclass(frozen=True)
class Allow:
    pass


@dataclass(frozen=True)
class Deny:
    reason: str


@dataclass(frozen=True)
class Modify:
    arguments: dict[str, Any]


Decision = Allow | Deny | Modify


@dataclass
class Verdict:
    """The chain's answer for one call: the arguments to run with, or why it is denied."""

    arguments: dict[str, Any]
    denied_by: str = ""
    reason: str = ""
    trail: list[dict[str, Any]] = field(default_factory=list)
    """Each hook's decision, in order (what the audit hook writes)."""

    @property
    def denied(self) -> bool:
        return bool(self.denied_by)

    def outcome(self) -> ToolOutcome:
        """The tool result the model is shown: a user's denial, with the hook's reason."""
        text = f"{DENIED_TEXT} Denied by the {self.denied_by} hook: {self.reason}"
        return ToolOutcome("denied", text)


def load_hook(name: str, options: dict[str, Any] | None = None) -> Any:
    """The hook named ``name`` (an entry point of ``GROUP``, or a shipped one), built."""
    found = {ep.name: ep for ep in entry_points(group=GROUP)}
    if name in found:
        factory = found[name].load()
    elif name in BUILTIN:
        module, _, attr = BUILTIN[name].partition(":")
        factory = getattr(__import__(module, fromlist=[attr]), attr)
    else:
        known = sorted(set(found) | set(BUILTIN))
        raise ConfigError(f"no tool hook named {name!r} (known: {', '.join(known)})")
    try:
        hook = factory(**(options or {}))
    except TypeError as exc:
        raise ConfigError(f"tool hook {name!r}: bad options: {exc}") from None
    if not getattr(hook, "name", None):
        hook.name = name
    return hook


class HookChain:
    """The enabled hooks, called in order with a time limit each (``core.ports.ToolHooks``)."""

    def __init__(self, hooks: Iterable[Any], *, timeout_s: float = 5.0, session_id: str = ""):
        self.hooks = list(hooks)
        self.timeout_s = timeout_s
        self.session_id = session_id
        self._started = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._ending: asyncio.Task[None] | None = None

    @classmethod
    def from_names(
        cls, names: Iterable[str], options: dict[str, dict[str, Any]] | None = None, **kw: Any
    ) -> HookChain:
        options = options or {}
        return cls([load_hook(n, options.get(n)) for n in names], **kw)

    async def _call(self, hook: Any, method: str, *args: Any) -> tuple[bool, Any]:
        """``(ok, result)``; a missing method is ``(True, None)``."""
        fn = getattr(hook, method, None)
        if fn is None:
            return True, None
        try:
            if inspect.iscoroutinefunction(fn):
                result = await asyncio.wait_for(fn(*args), self.timeout_s)
            else:
                result = await asyncio.wait_for(asyncio.to_thread(fn, *args), self.timeout_s)
        except TimeoutError:
            log.error("tool hook %s.%s took over %g s", hook.name, method, self.timeout_s)
            return False, f"the hook did not answer within {self.timeout_s:g} s"
        except Exception as exc:
            log.exception("tool hook %s.%s failed", hook.name, method)
            return False, f"the hook failed ({type(exc).__name__}: {exc})"
        return True, result

    async def before(self, call: ToolCall) -> Verdict:
        verdict = Verdict(dict(call.arguments))
        for hook in self.hooks:
            ok, result = await self._call(hook, "before_tool", call)
            if ok and isinstance(result, Modify) and isinstance(result.arguments, dict):
                verdict.arguments = dict(result.arguments)
                # The code shown was of the old arguments: a later hook sees none (the policy
                # then checks all of the new arguments) rather than code that will not run.
                call = ToolCall(**{**call.__dict__, "arguments": verdict.arguments, "code": None})
                verdict.trail.append({"hook": hook.name, "decision": "modify"})
                continue
            if ok and (result is None or isinstance(result, Allow)):
                verdict.trail.append({"hook": hook.name, "decision": "allow"})
                continue
            if ok and isinstance(result, Deny):
                reason = result.reason
            else:  # fail closed: a failure, a timeout, or an answer we do not understand
                reason = result if not ok else f"the hook returned {type(result).__name__}"
            verdict.denied_by, verdict.reason = hook.name, str(reason)
            verdict.trail.append({"hook": hook.name, "decision": "deny", "reason": str(reason)})
            return verdict
        return verdict

    async def after(self, call: ToolCall, outcome: ToolOutcome) -> ToolOutcome:
        """The outcome as the hooks leave it; a disk budget the call crossed stays on it
        (what the sandbox measured is no hook's to take back)."""
        over = outcome.over_budget
        for hook in self.hooks:
            ok, result = await self._call(hook, "after_tool", call, outcome)
            if not ok:
                outcome = ToolOutcome("error", f"Error: the {hook.name} hook failed on the result")
                break
            if isinstance(result, ToolOutcome):
                outcome = result
        if over is not None and outcome.over_budget is None:
            outcome.over_budget = over
        return outcome

    async def session_event(self, method: str, info: dict[str, Any]) -> None:
        """``on_session_start``/``on_session_end``: failures are logged, never raised."""
        for hook in self.hooks:
            await self._call(hook, method, {"session_id": self.session_id, **info})

    def emit(self, event: Any) -> None:
        """A bus subscriber: the session's first run starting is ``on_session_start``."""
        if event.type == "run_started" and not self._started:
            self._started = True
            info = {"prompt": event.prompt, "model": event.model, "workdir": event.workdir}
            task = asyncio.get_running_loop().create_task(
                self.session_event("on_session_start", info)
            )
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def end_soon(self, info: dict[str, Any] | None = None) -> None:
        """``end`` from synchronous code (a bus's end of stream), as a kept task."""
        self._ending = asyncio.get_running_loop().create_task(self.end(info))

    async def end(self, info: dict[str, Any] | None = None) -> None:
        """``on_session_end`` (after any start notice still under way)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.session_event("on_session_end", info or {})


def parse_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """``NAME`` or ``NAME:key=value,key=value`` (values JSON when they parse, else text)."""
    import json

    name, _, rest = spec.partition(":")
    options: dict[str, Any] = {}
    for item in filter(None, rest.split(",")):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"hook option {item!r} must be key=value")
        try:
            options[key.strip()] = json.loads(value)
        except ValueError:
            options[key.strip()] = value
    return name.strip(), options
