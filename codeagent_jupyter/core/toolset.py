"""Toolsets: what the model may call, as parts that compose, and what a call is told.

A session's tools are a list of toolsets (the standard tools, the ``delegate`` tool, …)
combined into one: adding a tool is adding a toolset, never wrapping a class. Each call
gets a ``ToolContext`` (pydantic-ai's ``RunContext`` is the model): which step and call it
serves, where its live output goes, and what the run has left; a tool never has to listen
on the event bus to learn which call it is.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..config import AgentConfig
from ..errors import ConfigError, ToolArgumentError
from ..events import Event
from ..traits import UNKNOWN_TOOL, ToolTraits
from .outcome import ToolOutcome
from .ports import OutputCallback, ToolHooks, Usage

Publish = Callable[..., Event]
"""``(event class, **fields) -> event``: the session bus's ``publish``."""


@dataclass(frozen=True)
class ToolContext:
    """What one tool call is told about itself and its run."""

    step: int = 0
    """The model call (of the current run) whose reply asked for this call."""
    tool_call_id: str = ""
    on_output: OutputCallback | None = None
    """Receives each nbformat output as a cell produces it (live display)."""
    config: AgentConfig = field(default_factory=AgentConfig)
    """The run's budgets and settings."""
    steps_taken: int = 0
    """Model calls the run has made so far (this step included)."""
    tokens_used: int = 0
    """Tokens the session has used so far (what its token budget counts)."""
    publish: Publish | None = None
    """Publishes an event on the session's bus (a helper's events, under this call)."""
    charge: Callable[[Usage], None] | None = None
    """Counts tokens spent on the session's behalf (by helpers) against its budget."""
    hooks: ToolHooks | None = None
    """The session's tool hooks: a tool that runs agents of its own applies them there."""
    approve: Callable[[str, Any], Awaitable[bool]] | None = None
    """``(name, details) -> approved``: asks the user about this call once the tool knows
    what it would do (``install_packages``: which wheels, how big, from where), through the
    session's approver and the same approval events as a tool under ``ask``."""


@runtime_checkable
class Toolset(Protocol):
    """Some tools: their schemas (fixed, for prompt caching) and a checked call.

    A toolset may also say what its tools are (``definition(name)``: an object with
    ``traits``, ``describe(arguments) -> (display code, notebook cell)``) and give its lines
    of the system prompt (``prompt_lines() -> [(rank, line)]``); one that does not is taken
    to run outside the sandbox (``UNKNOWN_TOOL``: policy-checked) and adds no line.
    """

    @property
    def names(self) -> set[str]: ...

    def schemas(self) -> list[dict[str, Any]]:
        """Tool definitions in OpenAI form, in a fixed order."""
        ...

    async def call(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext | None = None
    ) -> ToolOutcome:
        """Run tool ``name``; ``ToolArgumentError`` for arguments that do not fit, ``ToolError``
        when the tool refuses; a failure of the work itself is an outcome."""
        ...


class CombinedToolset:
    """Several toolsets offered as one, in order; a name may be offered only once."""

    def __init__(self, toolsets: Sequence[Toolset]) -> None:
        self.toolsets = list(toolsets)
        self._owner: dict[str, Toolset] = {}
        for toolset in self.toolsets:
            for schema in toolset.schemas():
                name = schema["function"]["name"]
                if name in self._owner:
                    raise ConfigError(f"tool {name!r} is offered twice")
                self._owner[name] = toolset
        self._schemas = [s for t in self.toolsets for s in t.schemas()]

    @property
    def names(self) -> set[str]:
        return set(self._owner)

    def schemas(self) -> list[dict[str, Any]]:
        """Every toolset's definitions, in order; a copy, so callers cannot disturb the next."""
        return copy.deepcopy(self._schemas)

    def definition(self, name: str) -> Any:
        owner = self._owner.get(name)
        find = getattr(owner, "definition", None)
        return find(name) if find is not None else None

    def prompt_lines(self) -> list[tuple[int, str]]:
        return [line for toolset in self.toolsets for line in prompt_lines(toolset)]

    async def call(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext | None = None
    ) -> ToolOutcome:
        toolset = self._owner.get(name)
        if toolset is None:
            available = ", ".join(self._owner)
            raise ToolArgumentError(f"unknown tool {name!r}; available: {available}")
        return await toolset.call(name, arguments, ctx)


def combine(tools: Toolset | Sequence[Toolset]) -> Toolset:
    """One toolset from one or several."""
    if isinstance(tools, Sequence):
        return tools[0] if len(tools) == 1 else CombinedToolset(tools)
    return tools


def describe(
    tools: Toolset, name: str, arguments: Any
) -> tuple[ToolTraits, str | None, str | None]:
    """``(traits, display code, notebook cell)`` of a call, from the tool's own declaration;
    a tool without one gets ``UNKNOWN_TOOL`` (fails closed) and no code or cell."""
    find = getattr(tools, "definition", None)
    definition = find(name) if find is not None else None
    if definition is None:
        return UNKNOWN_TOOL, None, None
    code, cell = definition.describe(arguments)
    return definition.traits, code, cell


UNRANKED = 500
"""The rank of a prompt line a toolset gives without one (a plain string): after the built-in
tools' lines, before the images line."""


def prompt_lines(tools: Toolset) -> list[tuple[int, str]]:
    """The toolset's ranked lines of the system prompt (none when it gives none); a line
    given as a plain string is ranked ``UNRANKED``, in the order given."""
    lines = getattr(tools, "prompt_lines", None)
    given = list(lines()) if lines is not None else []
    return [(UNRANKED, line) if isinstance(line, str) else tuple(line) for line in given]
