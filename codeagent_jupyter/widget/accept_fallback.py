"""``%agent accept N`` / ``%agent accept all``: Accept without the JupyterLab extension.

The cells go into a new cell below (IPython's ``set_next_input``), with the imports they
need (``handoff``); an edit of a notebook cell comes as its new source under a note, since
it cannot be edited in place. The decisions are recorded in the session as Accept does.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from .actions import edit_note
from .panel import AgentPanel


def accept(shell: Any, panels: list[AgentPanel], which: str) -> None:
    """The fallback for Accept: put the cell's code in the next cell (``set_next_input``)."""
    panel = next((p for p in reversed(panels) if p.session_id), None)
    if panel is None:
        raise UsageError("%agent accept: no agent session in this kernel yet")
    state = panel.state
    if which == "all":
        cells = [c for c in state.cells if c.ran_cleanly and c.decision is not False]
    else:
        cell = state.cell_number(int(which))
        if cell is None or not cell.finished:
            raise UsageError(f"%agent accept: the panel has no finished cell {which}")
        cells = [cell]
    if not cells:
        raise UsageError("%agent accept: no cell to accept")
    source = "\n\n".join(
        (edit_note(c, "no JupyterLab extension to edit it in place") + c.notebook_source)
        if c.edit
        else panel.handoff(c)
        for c in cells
    )
    shell.set_next_input(source, replace=False)
    undecided = [c.tool_call_id for c in cells if c.decision is None]
    if undecided and panel.client is not None:
        panel.run("accept", _record(panel, undecided))
    numbers = ", ".join(str(c.number) for c in cells)
    panel.say(f"Cell(s) {numbers} put in a new cell below by %agent accept.")


async def _record(panel: AgentPanel, tool_call_ids: list[str]) -> None:
    assert panel.client is not None and panel.session_id is not None
    for tcid in tool_call_ids:
        await panel.client.decide(panel.session_id, tcid, True)
