"""The user's notebook as they see it now, not as it was last saved.

``%agent fix`` and ``edit_cell`` name cells by id, and the agent reads the notebook for
context. The saved file lags behind the open document: a cell typed and run but not yet
saved is not in it, so the server alone would answer "no code cell …". The client sends the
live cells with the start request: all of them when the JupyterLab extension read the open
document (``cells_complete``), or only the ones the kernel itself knows (the cell that
failed) otherwise, laid over the saved notebook. The cells are data for the model's
context and the ``edit_cell`` proposals; nothing of them runs.
"""

from __future__ import annotations

from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell

_TEXT = {"type": "string", "maxLength": 2_000}
OUTPUT_ENTRY = {
    "type": "object",
    "properties": {
        "output_type": {"enum": ["stream", "error", "execute_result", "display_data"]},
        "text": _TEXT,
    },
    "required": ["output_type"],
    "additionalProperties": False,
}
"""One output of a live cell, already reduced to the short text the model's context shows."""
CELL_ENTRY = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"},
        "cell_type": {"enum": ["code", "markdown", "raw"]},
        "source": {"type": "string", "maxLength": 100_000},
        "execution_count": {"type": ["integer", "null"]},
        "outputs": {"type": "array", "items": OUTPUT_ENTRY, "maxItems": 20},
    },
    "required": ["id", "source"],
    "additionalProperties": False,
}
"""One cell of ``POST /sessions``' ``cells``: its id (nbformat 4.5), type and source."""
CELLS = {"type": "array", "items": CELL_ENTRY, "maxItems": 2_000}


def _cell(entry: dict[str, Any]) -> Any:
    kind = entry.get("cell_type", "code")
    if kind == "markdown":
        return new_markdown_cell(entry["source"], id=entry["id"])
    if kind == "raw":
        return new_raw_cell(entry["source"], id=entry["id"])
    outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=out.get("text", ""))
        for out in entry.get("outputs") or []
        if out.get("text")
    ]
    cell = new_code_cell(entry["source"], id=entry["id"], outputs=outputs)
    cell.execution_count = entry.get("execution_count")
    return cell


def live_notebook(saved: Any | None, cells: list[dict[str, Any]], complete: bool) -> Any:
    """The notebook to work from: ``cells`` alone when ``complete``; otherwise ``saved``
    with each of ``cells`` replacing the saved cell of the same id (or appended)."""
    if complete or saved is None:
        return new_notebook(cells=[_cell(c) for c in cells])
    notebook = nbformat.from_dict(saved)
    index = {c.get("id"): i for i, c in enumerate(notebook.cells)}
    for entry in cells:
        cell = _cell(entry)
        if entry["id"] in index:
            notebook.cells[index[entry["id"]]] = cell
        else:
            notebook.cells.append(cell)
    return notebook
