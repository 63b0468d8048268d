"""Tools the model can call: run code in the sandbox, work with workspace files, keep a plan.

Public API: ``ToolBox`` (schemas + checked calls); a call's result is a ``ToolOutcome``.
"""

from ..core.outcome import ToolOutcome
from .toolbox import ToolBox

__all__ = ["ToolBox", "ToolOutcome"]
