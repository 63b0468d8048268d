"""Tools the model can call: run code in the sandbox, work with workspace files, keep a plan.

Public API: ``ToolBox`` (schemas + checked calls) and ``ToolResult``.
"""

from .toolbox import ToolBox, ToolResult

__all__ = ["ToolBox", "ToolResult"]
