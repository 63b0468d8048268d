"""Getting accepted cells into the user's notebook.

With the JupyterLab extension, cells are inserted below the panel's cell, in the agent's
order (cell 2 goes after cell 1 even when accepted later), unexecuted, with
``metadata.codeagent`` provenance. Without it (classic Notebook, VS Code, a plain kernel),
the panel says to run ``%agent accept N``, which puts the code in a new cell through
IPython's ``set_next_input``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..timeline.state import CellItem
from .bridge import BridgeError, NotebookBridge

FALLBACK = (
    "The JupyterLab extension is not available here: run `%agent accept {which}` in a cell "
    "to get the code in a new cell."
)


def edit_note(cell: CellItem, why: str = "") -> str:
    """The comment heading an accepted edit that lands in a new cell instead of its own."""
    target = (cell.edit or {}).get("cell_id", "?")
    because = f" ({why})" if why else ""
    return f"# codeagent: proposed replacement for cell {target}{because}\n"


def provenance(session_id: str, cell: CellItem) -> dict[str, Any]:
    """What an inserted cell records about where it came from."""
    return {
        "codeagent": {
            "session_id": session_id,
            "step": cell.step,
            "tool_call_id": cell.tool_call_id,
        }
    }


class Inserter:
    """Inserts accepted cells through the bridge, remembering where each one went."""

    def __init__(self, bridge: NotebookBridge | None, anchor_cell_id: str | None) -> None:
        self.bridge = bridge
        self.anchor_cell_id = anchor_cell_id
        self.inserted: dict[int, str] = {}  # panel cell number -> notebook cell id
        self._claimed: set[int] = set()  # inserted or being inserted
        self._edits: dict[int, str] = {}  # panel cell number of an edit -> the cell holding it
        self.source_of: Callable[[CellItem], str] = lambda cell: cell.notebook_source
        """The source an accepted cell gets in the notebook (the panel adds the imports
        of preloaded names, ``handoff.handoff_source``)."""

    async def available(self) -> bool:
        return self.bridge is not None and await self.bridge.available()

    async def insert(self, session_id: str, cells: list[CellItem], *, run: bool = False) -> str:
        """Insert ``cells`` (and, with ``run``, run them in the user's kernel: "Accept and
        run"); returns a one-line account of what happened for the panel."""
        todo = sorted((c for c in cells if c.number not in self._claimed), key=lambda c: c.number)
        if not todo:
            return "Already in the notebook."
        if not await self.available():
            which = str(todo[0].number) if len(todo) == 1 else "all"
            return FALLBACK.format(which=which)
        assert self.bridge is not None
        edits = [c for c in todo if c.edit]
        note = await self._apply_edits(session_id, edits) if edits else ""
        todo = [c for c in todo if not c.edit]
        inserted = await self._insert_cells(session_id, todo) if todo else ""
        said = " ".join(part for part in (note, inserted) if part)
        if run:
            said = await self._run(cells, said)
        return said

    async def _run(self, cells: list[CellItem], said: str) -> str:
        """Run the notebook cells that hold ``cells`` now (inserted, or edited in place)."""
        assert self.bridge is not None
        numbers = sorted(c.number for c in cells)
        ids = [self._edits.get(n) or self.inserted.get(n) for n in numbers]
        ids = [i for i in ids if i]
        if not ids:
            return said
        try:
            await self.bridge.run_cells(ids)
        except BridgeError as e:
            return f"{said} codeagent: could not run it: {e}".strip()
        said = said.replace(" (not run)", "").replace(" (outputs cleared; run it)", "")
        return f"{said} Running it in your kernel."

    async def _insert_cells(self, session_id: str, todo: list[CellItem]) -> str:
        """New cells below the panel (the agent's own cells), in the agent's order."""
        assert self.bridge is not None
        self._claimed.update(c.number for c in todo)  # an Accept all racing an Accept
        for index, cell in enumerate(todo):
            entry = {"source": self.source_of(cell), "metadata": provenance(session_id, cell)}
            try:
                ids = await self._insert(entry, cell.number)
            except BridgeError as e:
                self._claimed.difference_update(c.number for c in todo[index:])
                return f"codeagent: could not insert cell {cell.number}: {e}"
            if ids:
                self.inserted[cell.number] = ids[-1]
        numbers = ", ".join(str(c.number) for c in todo)
        plural = "s" if len(todo) > 1 else ""
        return f"Inserted cell{plural} {numbers} into the notebook (not run)."

    async def _apply_edits(self, session_id: str, cells: list[CellItem]) -> str:
        """Accepted ``edit_cell`` proposals: the user's cell gets the new source (by id);
        if the labextension cannot (an old build, the cell is gone), the new source goes in
        a cell below it with a note, as for any accepted cell."""
        assert self.bridge is not None
        notes = []
        for cell in cells:
            self._claimed.add(cell.number)
            edit = cell.edit or {}
            target = str(edit.get("cell_id", ""))
            meta = provenance(session_id, cell)
            meta["codeagent"]["edit_reason"] = edit.get("reason", "")
            try:
                await self.bridge.replace_cell(target, cell.code, meta, edit.get("old_source"))
                notes.append(f"Replaced the source of cell {target} (outputs cleared; run it).")
                self._edits[cell.number] = target
            except BridgeError as e:
                entry = {"source": edit_note(cell, str(e)) + cell.code, "metadata": meta}
                try:
                    try:
                        placed = await self.bridge.insert_cells([entry], target)
                    except BridgeError:  # the cell is gone: below the panel instead
                        placed = await self.bridge.insert_cells([entry], self.anchor_cell_id)
                except BridgeError as again:
                    self._claimed.discard(cell.number)
                    notes.append(f"codeagent: could not apply the edit of cell {target}: {again}")
                    continue
                if placed:
                    self._edits[cell.number] = placed[-1]
                notes.append(f"Put the edit of cell {target} in a new cell below it: {e}")
        return " ".join(notes)

    async def _insert(self, entry: dict[str, Any], number: int) -> list[str]:
        """Insert below the right neighbour; if the user deleted it, below the next one."""
        assert self.bridge is not None
        while True:
            after = self._after(number)
            try:
                return await self.bridge.insert_cells([entry], after)
            except BridgeError as e:
                if after is None or not str(e).startswith("no cell with id"):
                    raise
            if after == self.anchor_cell_id:
                self.anchor_cell_id = None  # then the frontend picks the panel's cell or cursor
            self.inserted = {n: i for n, i in self.inserted.items() if i != after}

    def _after(self, number: int) -> str | None:
        """The notebook cell to insert after: the last inserted one before ``number``."""
        earlier = [n for n in self.inserted if n < number]
        return self.inserted[max(earlier)] if earlier else self.anchor_cell_id

    def close(self) -> None:
        if self.bridge is not None:
            self.bridge.close()
