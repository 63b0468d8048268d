"""Helpers' work as sections of the parent's session notebook.

A ``delegate`` call's helpers run at once, so their events arrive interleaved. Each helper's
cells are built by a notebook recorder of its own (in memory: the same cells its own notebook
gets) and placed in the parent's notebook under a heading, ``Helper 1-2: <task>``, each new
cell right after that helper's last one, so every helper's section stays in one piece, and
the sections of one call in the order of its tasks. Every
cell of a section carries ``child`` and ``parent_tool_call_id`` in ``metadata.codeagent``:
resume and re-execution leave those cells alone (they ran in the helper's sandbox).
"""

from __future__ import annotations

from typing import Any

import nbformat
from nbformat.v4 import new_markdown_cell

from .. import events as ev

HEADING = "helper"
"""``metadata.codeagent.kind`` of a section's heading cell."""


def is_helper_cell(cell: Any) -> bool:
    """Whether a cell of a session notebook belongs to a helper's section."""
    return bool(cell.get("metadata", {}).get("codeagent", {}).get("child"))


def _after(label: str, other: str) -> bool:
    """Whether helper ``label`` is a later helper of the same call as ``other`` ("1-3" vs
    "1-2"): sections are kept in the order of the tasks, whichever helper starts first."""
    call, _, n = label.partition("-")
    other_call, _, other_n = other.partition("-")
    return call == other_call and n.isdigit() and other_n.isdigit() and int(n) > int(other_n)


class HelperSections:
    """Adds each helper's cells to the parent notebook ``notebook`` as they are made."""

    def __init__(self, notebook: Any, run: Any, builder: Any) -> None:
        self.notebook = notebook
        self.run = run
        """``() -> int``: the parent's current run index (the cells' ``run``)."""
        self.builder = builder
        """``() -> recorder``: an in-memory notebook recorder that turns one helper's events
        into cells (the parent's recorder passes its own kind, so both record alike)."""
        self._builders: dict[str, Any] = {}
        self._last: dict[str, str] = {}
        """Helper label -> id of its section's last cell."""
        self._heads: dict[str, str] = {}
        """Helper label -> id of its section's heading."""

    def add(self, e: ev.HelperEvent, inner: ev.Event) -> Any:
        """Record one helper event; returns the last cell it created (or None)."""
        builder = self._builders.get(e.child)
        tags = {"child": e.child, "parent_tool_call_id": e.parent_tool_call_id}
        if builder is None:
            builder = self._builders[e.child] = self.builder()
            heading = new_markdown_cell(f"### Helper {e.child}: {e.task}")
            self._place(e.child, heading, {"kind": HEADING, "task": e.task, **tags})
        before = len(builder.notebook.cells)
        builder.emit(inner)
        placed = None
        for cell in builder.notebook.cells[before:]:
            if cell.metadata["codeagent"].get("kind") == "prompt":
                continue  # the heading says the task already
            self._place(e.child, cell, {**cell.metadata["codeagent"], **tags})
            placed = cell
        return placed

    def _place(self, child: str, cell: Any, meta: dict[str, Any]) -> None:
        cell.metadata["codeagent"] = {**meta, "run": self.run()}
        nbformat.validate(cell, ref=f"{cell.cell_type}_cell", version=4)
        cells = self.notebook.cells
        index = len(cells)
        last = self._last.get(child)
        if last is not None:
            index = next((i + 1 for i, c in enumerate(cells) if c.id == last), index)
        else:  # a new section: before the sections of the same call's later helpers
            later = {self._heads[c] for c in self._heads if _after(c, child)}
            index = next((i for i, c in enumerate(cells) if c.id in later), index)
            self._heads[child] = cell.id
        cells.insert(index, cell)
        self._last[child] = cell.id
