"""Every built-in tool by name, and what the package asks of a tool it did not build.

``standard`` lists the tools ``ToolBox`` runs; ``install_packages`` and ``delegate`` are
toolsets of their own (``InstallTool``, ``HelperTool``) whose ``Tool`` declarations are
registered here too, so each tool's traits, prompt line and schema are found in one place.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..config import compose_prompt
from ..traits import UNKNOWN_TOOL, ToolTraits
from . import delegate, install, view
from ._schema import Tool
from .standard import FOR_NOTEBOOK, FOR_SEEING, STANDARD

BUILTIN: dict[str, Tool] = {
    tool.name: tool for tool in (*STANDARD, *FOR_NOTEBOOK, *FOR_SEEING, install.TOOL, delegate.TOOL)
}
"""The package's own tools, by name."""

DEFAULT_TOOLS = frozenset(tool.name for tool in STANDARD)
"""The tools every session offers unless configured otherwise."""


def traits_of(name: str) -> ToolTraits:
    """A built-in tool's traits (``UNKNOWN_TOOL``'s, failing closed, for any other name)."""
    tool = BUILTIN.get(name)
    return tool.traits if tool is not None else UNKNOWN_TOOL


def prompt_lines(tools: Iterable[Tool]) -> list[tuple[int, str]]:
    """The ranked prompt lines of ``tools``, with the images line: ``view_image``'s own when
    it is among them (a model that sees), else the one that says images do not arrive."""
    listed = list(tools)
    lines = [(t.prompt_rank, t.prompt) for t in listed if t.prompt]
    if not any(t.prompt_rank == view.IMAGES_RANK for t in listed if t.prompt):
        lines.append((view.IMAGES_RANK, view.BLIND_PROMPT))
    return lines


def system_prompt(names: Iterable[str]) -> str:
    """The system message for a session offering the built-in tools ``names``."""
    return compose_prompt(prompt_lines(BUILTIN[n] for n in names if n in BUILTIN))
