"""The session notebook's "Network" cell: one per run, listing the requests the sandbox
made through its egress broker (``--network policy``), updated as they come.

The lines are the sandbox's own text (its URLs), so they sit in a fenced text block,
never read as Markdown: a URL cannot become a link, an image or HTML in the notebook.
Bounded: past ``MAX_LINES`` requests a run's cell only counts the rest.
"""

from __future__ import annotations

from typing import Any

from nbformat.v4 import new_markdown_cell

from .. import events as ev

MAX_LINES = 200
FENCE = "````"


class NetworkSection:
    """Builds and updates the current run's Network cell."""

    def __init__(self) -> None:
        self._cell: Any = None
        self._run = -1
        self._lines: list[str] = []
        self._refused = 0
        self._more = 0

    def add(self, e: ev.NetworkRequest, run: int) -> tuple[Any, bool]:
        """The run's cell with ``e`` added, and whether it is new (to append)."""
        new = self._cell is None or run != self._run
        if new:
            self._cell, self._run = new_markdown_cell(""), run
            self._lines, self._refused, self._more = [], 0, 0
        self._refused += not e.allowed
        if len(self._lines) < MAX_LINES:
            self._lines.append(e.summary().replace(FENCE, "'''"))
        else:
            self._more += 1
        count = len(self._lines) + self._more
        head = f"**Network:** {count} request{'s' * (count != 1)} through the egress broker"
        head += f", {self._refused} refused" if self._refused else ""
        more = [f"… and {self._more} more (all in the event log)"] if self._more else []
        self._cell.source = "\n".join([head, "", FENCE + "text", *self._lines, *more, FENCE])
        return self._cell, new
