"""The tools ``ToolBox`` runs, one registration line each, in the order the model sees them.

Adding a tool the toolbox runs: declare its ``Tool`` in its own module (schema, handler,
``ToolTraits``, display ``code``, notebook ``cell``, prompt line) and add it to one of these
tuples. The rest of the package learns what it is from its traits, never from its name.
"""

from __future__ import annotations

from . import cells, edit_cell, edit_file, file_tools, plan, view
from ._schema import Tool

STANDARD: tuple[Tool, ...] = (
    cells.RUN_CELL,
    cells.RUN_COMMAND,
    file_tools.READ_FILE,
    file_tools.WRITE_FILE,
    edit_file.TOOL,
    file_tools.LIST_FILES,
    file_tools.SEARCH_FILES,
    plan.UPDATE_PLAN,
)
"""Offered in every session (unless the configuration enables fewer)."""

FOR_NOTEBOOK: tuple[Tool, ...] = (edit_cell.EDIT_CELL,)
"""Offered when the session knows the user's notebook (its code cells by id)."""

FOR_SEEING: tuple[Tool, ...] = (view.VIEW_IMAGE,)
"""Offered to a model that sees."""
