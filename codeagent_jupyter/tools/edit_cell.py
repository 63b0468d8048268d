"""``edit_cell``: propose a new source for one of the user's own notebook cells.

The tool changes nothing: the proposal (old and new source, a unified diff, the reason)
travels on ``ToolCallFinished.edit`` to the panel, where the user accepts or rejects it.
Accept replaces the cell's source in the live notebook (labextension, by cell id) or, without
it, puts the new source in a cell below. Model-written code never runs in the user's kernel
without that click.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from ..core.outcome import ToolOutcome
from ..errors import ToolError
from ..traits import ToolTraits
from ..util.textbounds import head_tail
from ._schema import Tool, obj

MAX_SOURCE = 100_000


def cells_of(notebook: Any) -> dict[str, str]:
    """The user's code cells by cell id (nbformat 4.5 ids), sources joined."""
    cells = {}
    for cell in (notebook or {}).get("cells", []):
        cell_id = cell.get("id")
        if cell_id and cell.get("cell_type") == "code":
            source = cell.get("source", "")
            cells[str(cell_id)] = source if isinstance(source, str) else "".join(source)
    return cells


def labels_of(notebook: Any) -> dict[str, str]:
    """The user's code cells that ran, named as the notebook shows them (``In [9]``)."""
    labels = {}
    for cell in (notebook or {}).get("cells", []):
        count = cell.get("execution_count")
        if cell.get("id") and cell.get("cell_type") == "code" and isinstance(count, int):
            labels[str(cell["id"])] = f"In [{count}]"
    return labels


def unified_diff(old: str, new: str, cell_id: str, label: str = "") -> str:
    """The diff of a proposal; its header names the cell as the user sees it (``In [9]``)
    when it ran, else by its id."""
    name = label or f"cell {cell_id}"
    lines = difflib.unified_diff(
        old.splitlines(),
        new.splitlines(),
        name,
        f"{name} (proposed)" if label else "proposed",
        lineterm="",
    )
    return "\n".join(lines)


def propose(
    cells: Mapping[str, str],
    cell_id: str,
    new_source: str,
    reason: str,
    labels: Mapping[str, str] | None = None,
) -> ToolOutcome:
    """The outcome of an ``edit_cell`` call; ``ToolError`` for an unknown cell or no change.
    ``labels`` name cells as the user sees them (``labels_of``), for the diff and the panel."""
    if cell_id not in cells:
        known = ", ".join(list(cells)[:20]) or "none"
        raise ToolError(f"edit_cell: no code cell {cell_id!r} in the user's notebook ({known})")
    if len(new_source) > MAX_SOURCE:
        raise ToolError(f"edit_cell: new_source is longer than {MAX_SOURCE} characters")
    old = cells[cell_id]
    if old == new_source:
        raise ToolError(f"edit_cell: new_source is the same as cell {cell_id}'s source")
    label = (labels or {}).get(cell_id, "")
    diff = unified_diff(old, new_source, cell_id, label)
    edit = {
        "cell_id": cell_id,
        "label": label,
        "old_source": old,
        "new_source": new_source,
        "reason": reason.strip(),
        "diff": diff,
    }
    text = (
        f"Proposed an edit of cell {cell_id}; the user will accept or reject it (nothing ran "
        f"in their kernel).\n{diff}"
    )
    return ToolOutcome(text=text, code=new_source, edit=edit)


async def _handle(
    box: Any, *, cell_id: str, new_source: str, reason: str, on_output: Any, limit: int
) -> ToolOutcome:
    outcome = propose(box.notebook_cells, cell_id, new_source, reason, box.cell_labels)
    outcome.text = head_tail(outcome.text, limit)
    return outcome


EDIT_CELL = Tool(
    "edit_cell",
    "Propose a new source for one of the user's own notebook cells (cell ids are in the "
    "notebook context). Nothing runs: the user sees a diff with your reason and accepts or "
    "rejects it. Check the new code with run_cell first when the variables it needs are in "
    "your sandbox.",
    obj(
        ["cell_id", "new_source", "reason"],
        cell_id={"type": "string", "minLength": 1, "description": "The cell's id."},
        new_source={"type": "string", "description": "The complete new source of the cell."},
        reason={"type": "string", "description": "One sentence: what the edit fixes or adds."},
    ),
    _handle,
    ToolTraits("none", language="python", shown_as="cell", over_mcp=False),
    code=lambda args: args["new_source"],
    prompt="edit_cell proposes a change to one of the user's own notebook cells; they accept or "
    "reject it.",
    prompt_rank=80,
)
"""Offered only when the session knows the user's notebook (its code cells by id)."""
