"""Tool call events as the runner publishes them: with the built-in tool's traits, display
code and notebook cell, from the tool's own declaration (``tools.registry``)."""

from __future__ import annotations

from typing import Any

from codeagent_jupyter import events as ev
from codeagent_jupyter.tools import registry


def started(name: str, arguments: Any, **fields: Any) -> ev.ToolCallStarted:
    """The ``ToolCallStarted`` of a call of the built-in tool ``name``."""
    tool = registry.BUILTIN[name]
    code, cell = tool.describe(arguments)
    return ev.ToolCallStarted(
        name=name, arguments=arguments, code=code, cell_source=cell, traits=tool.traits, **fields
    )


def finished(name: str, **fields: Any) -> ev.ToolCallFinished:
    """The ``ToolCallFinished`` of a call of the built-in tool ``name``."""
    return ev.ToolCallFinished(name=name, traits=registry.traits_of(name), **fields)
