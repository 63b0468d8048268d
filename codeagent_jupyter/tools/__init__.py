"""Tools the model can call: run code in the sandbox, work with workspace files, keep a plan,
and hand independent tasks to helpers (``delegate``).

Public API: ``ToolBox`` (the standard tools, a ``Toolset``) and ``HelperTool`` (the
``delegate`` tool, another one); a call's result is a ``ToolOutcome``.
"""

from ..core.outcome import ToolOutcome
from .delegate import HelperSettings, HelperTool
from .toolbox import ToolBox

__all__ = ["HelperSettings", "HelperTool", "ToolBox", "ToolOutcome"]
