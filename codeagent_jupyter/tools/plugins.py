"""Plugin tools the administrator enabled, found by entry point and offered as one toolset.

Only the names asked for are loaded (a plugin installed but not enabled is never imported),
each must be a ``PluginTool`` under its own name, and none may take a built-in tool's name or
the ``mcp__`` prefix of MCP servers' tools: a plugin cannot shadow ``run_cell``.
"""

from __future__ import annotations

import copy
import functools
import inspect
import time
from collections.abc import Iterable
from importlib.metadata import entry_points
from typing import Any

from ..core.outcome import ToolOutcome
from ..core.ports import ToolCall
from ..core.toolset import ToolContext
from ..errors import ConfigError, ToolArgumentError, ToolError
from ..traits import ToolTraits
from ..util.textbounds import head_tail
from ..util.visible import visible
from . import cells
from ._schema import Tool, check
from .plugin_api import PluginTool

GROUP = "codeagent_jupyter.tools"
MCP_PREFIX = "mcp__"
UNASKED = (
    "Denied: this tool runs outside the sandbox and needs the user's approval, and there is "
    "no one to ask here (no terminal, or an MCP client); do not call it again."
)
MAX_PROMPT = 300
"""Characters of a plugin's line in the system prompt."""
MAX_CODE = 200_000
"""Characters of code a kernel plugin may build for one call."""


def builtin_names() -> set[str]:
    """Every tool name this package itself may offer (whatever a session enables)."""
    from .registry import BUILTIN

    return set(BUILTIN)


def installed() -> list[str]:
    """The names of the plugin tools installed (entry points of ``GROUP``)."""
    return sorted({ep.name for ep in entry_points(group=GROUP)})


def load(names: Iterable[str]) -> list[PluginTool]:
    """The plugin tools ``names``, in that order; ``ConfigError`` (one line) for a name that
    is not installed, clashes with a built-in, or whose entry point is not a ``PluginTool``."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return []
    found = {ep.name: ep for ep in entry_points(group=GROUP)}
    builtin = builtin_names()
    tools = []
    for name in wanted:
        if name in builtin or name.startswith(MCP_PREFIX):
            raise ConfigError(f"plugin tool {name!r} clashes with a built-in tool; refused")
        if name not in found:
            have = ", ".join(sorted(found)) or "none installed"
            raise ConfigError(f"unknown tool {name!r} (plugin tools: {have})")
        try:
            declared = found[name].load()
        except Exception as exc:
            raise ConfigError(f"plugin tool {name!r} failed to load: {exc}") from None
        if not isinstance(declared, PluginTool) or declared.name != name:
            raise ConfigError(f"entry point {name!r} is not a plugin tool named {name!r}")
        tools.append(declared)
    return tools


class PluginToolset:
    """Enabled plugin tools on one sandbox (a ``Toolset``); kernel tools run there."""

    def __init__(self, tools: Iterable[PluginTool], sandbox: Any, *, attended: bool = True) -> None:
        self.sandbox = sandbox
        self.attended = attended
        """Whether someone can answer an approval (a panel, a terminal); when not, a host
        tool under ``ask`` is denied saying so."""
        self._tools = {t.name: t for t in tools}
        self._schemas = [t.schema() for t in self._tools.values()]

    @property
    def names(self) -> set[str]:
        return set(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        return copy.deepcopy(self._schemas)

    def definition(self, name: str) -> Tool | None:
        """The plugin tool ``name`` as the package declares a tool: a kernel tool runs code,
        writes the workspace and is a notebook cell (its built code, so a replay re-runs it);
        a host tool runs outside the sandbox. Both are policy-checked (the traits' default)."""
        tool = self._tools.get(name)
        if tool is None:
            return None
        # The toolset asks for approval itself (``call``: it knows whether anyone can
        # answer, and says so when nobody can), so the runner is not told to ask again.
        if tool.runs == "kernel":
            traits = ToolTraits("kernel", True, language="python", shown_as="cell")
            built = functools.partial(_built_code, tool)
            return Tool(name, tool.description, tool.parameters, _not_here, traits, built, built)
        traits = ToolTraits("host", False)
        return Tool(name, tool.description, tool.parameters, _not_here, traits)

    def prompt_lines(self) -> list[str]:
        """The plugins' own lines for the system prompt (placed after the built-in tools'
        lines under "How to work", in this order: ``core.toolset.UNRANKED``)."""
        return [f"{t.name}: {_line(t.prompt)}" for t in self._tools.values() if t.prompt]

    async def call(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext | None = None
    ) -> ToolOutcome:
        tool = self._tools.get(name)
        if tool is None:
            raise ToolArgumentError(f"unknown tool {name!r}; available: {', '.join(self._tools)}")
        args = check(arguments, tool.parameters, name)
        ctx = ctx or ToolContext()
        limit = ctx.config.result_chars
        if tool.approval == "ask":
            approve = ctx.approve
            if approve is None or not await approve(name, args):
                return ToolOutcome.denied() if self.attended else ToolOutcome("denied", UNASKED)
        if tool.runs == "kernel":
            return await self._in_kernel(tool, args, ctx, limit)
        return await self._on_host(tool, args, limit)

    async def _in_kernel(
        self, tool: PluginTool, args: dict[str, Any], ctx: ToolContext, limit: int
    ) -> ToolOutcome:
        """The plugin builds the code on the host; it runs confined, as a cell does, and
        the session's hooks see it as a ``run_cell`` first (a policy hook cannot be passed
        by a tool it does not know)."""
        code = _called(tool, args)
        if not isinstance(code, str):
            raise ToolError(f"{tool.name}: the plugin returned no code to run")
        if len(code) > MAX_CODE:
            raise ToolError(f"{tool.name}: the plugin's code is over {MAX_CODE} characters")
        if ctx.hooks is not None:  # fail closed: the hooks see the code as the cell it is
            hooks, args = ctx.hooks, {"code": code}
            call = ToolCall(hooks.session_id, ctx.step, ctx.tool_call_id, "run_cell", args)
            verdict = await hooks.before(call)
            if verdict.denied:
                return verdict.outcome()
            code = str(verdict.arguments.get("code", code))
        res = await cells.run_cell(self.sandbox, code, ctx.on_output)
        return ToolOutcome.of_execution(res, code, limit)

    async def _on_host(self, tool: PluginTool, args: dict[str, Any], limit: int) -> ToolOutcome:
        started = time.perf_counter()
        result = _called(tool, args)
        if inspect.isawaitable(result):
            try:
                result = await result
            except Exception as exc:
                raise ToolError(f"{tool.name} failed: {type(exc).__name__}: {exc}") from None
        text = visible(result if isinstance(result, str) else str(result))
        return ToolOutcome(text=head_tail(text, limit), duration_s=time.perf_counter() - started)


async def _not_here(*_: Any, **__: Any) -> Any:
    """A plugin's declaration is run by ``PluginToolset.call``, never through its handler."""
    raise ToolError("a plugin tool runs through its toolset")


def _built_code(tool: PluginTool, args: dict[str, Any]) -> str | None:
    """A kernel plugin's code for these arguments (what the call shows and records); None
    when the plugin builds none for them."""
    try:
        code = tool.function(**check(args, tool.parameters, tool.name))
    except Exception:
        return None
    return code if isinstance(code, str) and len(code) <= MAX_CODE else None


def _line(text: str) -> str:
    """A plugin's prompt line: one line, visible, at most ``MAX_PROMPT`` characters."""
    said = visible(" ".join(text.split()))
    return said if len(said) <= MAX_PROMPT else said[: MAX_PROMPT - 1] + "…"


def _called(tool: PluginTool, args: dict[str, Any]) -> Any:
    """The plugin's function on the call's arguments; its failure is the call's error."""
    try:
        return tool.function(**args)
    except Exception as exc:
        raise ToolError(f"{tool.name} failed: {type(exc).__name__}: {exc}") from None
