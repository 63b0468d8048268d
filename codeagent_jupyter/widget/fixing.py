"""``%agent fix``: the user's last failed cell, turned into a request for an ``edit_cell``.

The extension watches cells as they finish (IPython's ``post_run_cell``) and keeps the last
one that raised: its source, its notebook cell id (JupyterLab sends it with the execute
request) and the traceback text, ANSI codes stripped. The request names the cell id so the
model's proposal lands on that very cell, and suggests ``--with`` for the names the cell uses
that exist in this kernel, so the agent can reproduce and check its fix in the sandbox.
"""

from __future__ import annotations

import ast
import os
import re
import traceback
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..util.textbounds import head_tail, strip_ansi

MAX_TRACEBACK = 4_000
REMEMBERED = 50
"""Failed cells remembered by cell id (for ``%agent --cell ID fix``, the error button)."""
TITLE_ERROR_CHARS = 120
_FIX = re.compile(r"fix(?:\s+(?:In\s*\[\s*(\d+)\s*\]|(\d+)))?", re.IGNORECASE)


def fix_target(request: str) -> tuple[bool, int | None]:
    """Whether ``request`` asks for a fix, and of which cell by its count: ``fix`` (the
    last failed cell), ``fix In[9]``, ``fix In [9]`` or ``fix 9`` (the cell shown ``In [9]``)."""
    match = _FIX.fullmatch(request.strip())
    if match is None:
        return False, None
    number = match.group(1) or match.group(2)
    return True, int(number) if number else None


@dataclass(frozen=True)
class FailedCell:
    source: str
    cell_id: str | None
    error: str
    count: int | None = None
    """The cell's execution count as the notebook shows it (``In [9]``), when known."""

    @property
    def label(self) -> str | None:
        """The cell as the user sees it: ``In [9]``."""
        return f"In [{self.count}]" if self.count else None


class FailureWatcher:
    """Remembers the last cell that raised in this kernel, and the last failure of each
    notebook cell (a cell that ran cleanly since is forgotten)."""

    def __init__(self) -> None:
        self.last: FailedCell | None = None
        self.by_cell: OrderedDict[str, FailedCell] = OrderedDict()

    def failed(self, cell_id: str | None) -> FailedCell | None:
        """The failure of ``cell_id`` (the last failure of any cell when None)."""
        return self.last if cell_id is None else self.by_cell.get(cell_id)

    def post_run_cell(self, result: Any) -> None:
        error = result.error_in_exec or result.error_before_exec
        info = result.info
        cell_id = getattr(info, "cell_id", None)
        if error is None:
            if cell_id:
                self.by_cell.pop(cell_id, None)
            return
        source = getattr(info, "raw_cell", "") or ""
        if source.lstrip().startswith("%agent"):
            return  # a failing %agent is not the user's code
        self.last = FailedCell(source, cell_id, traceback_text(error))
        if cell_id:
            self.by_cell[cell_id] = self.last
            self.by_cell.move_to_end(cell_id)
            while len(self.by_cell) > REMEMBERED:
                self.by_cell.popitem(last=False)


def failed_from_notebook(cell: dict[str, Any]) -> FailedCell | None:
    """A failed cell as the open notebook shows it (``get_cells``): its source and its error
    output, for a cell this kernel did not see fail (before ``%load_ext``, another kernel)."""
    errors = [o for o in cell.get("outputs") or [] if o.get("output_type") == "error"]
    if not errors or not isinstance(cell.get("source"), str):
        return None
    text = "\n".join(strip_ansi(str(o.get("text") or "")) for o in errors)
    count = cell.get("execution_count")
    count = count if isinstance(count, int) and not isinstance(count, bool) else None
    return FailedCell(cell["source"], str(cell.get("id") or "") or None, text, count)


def failed_in_notebook(
    live: dict[str, Any] | None, *, cell_id: str | None = None, number: int | None = None
) -> FailedCell | str:
    """The failed cell ``cell_id`` (or the one shown ``In [number]``) of the open notebook
    (``live``: the labextension's ``get_cells``, None without it), or the one line saying
    why there is none to fix."""
    what = f"cell {cell_id}" if cell_id is not None else f"In [{number}]"
    if live is None:
        return f"%agent fix: {what}: the notebook cannot be read without the JupyterLab extension"
    cells = live.get("cells") or []
    if cell_id is not None:
        found = [c for c in cells if c.get("id") == cell_id]
    else:
        found = [c for c in cells if c.get("execution_count") == number]
    failures = [f for f in (failed_from_notebook(c) for c in found) if f is not None]
    if len(failures) == 1:
        return failures[0]
    where = "no such cell in the notebook" if not found else "no error output"
    if len(failures) > 1:
        where = "more than one cell shows that number"
    return f"%agent fix: {what}: {where}; run the cell again, then fix it"


def traceback_text(error: BaseException) -> str:
    """The traceback from the user's cell on: IPython's own frames (which name paths of
    this machine and say nothing about the bug) are left out."""
    tb = error.__traceback__
    while tb is not None and f"{os.sep}IPython{os.sep}" in tb.tb_frame.f_code.co_filename:
        tb = tb.tb_next
    return strip_ansi("".join(traceback.format_exception(type(error), error, tb)))


def names_used(source: str, namespace: dict[str, Any]) -> list[str]:
    """Variables the cell reads that this kernel has (candidates for ``--with``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    seen = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)):
            continue
        if node.id in namespace and node.id not in seen and not node.id.startswith("_"):
            seen.append(node.id)
    return seen


def fix_title(failed: FailedCell) -> str:
    """The request as people read it (panel, session list): "Fix In [9]: NameError: name
    'count' is not defined" — the cell as the notebook shows it and the error's last line."""
    lines = [line.strip() for line in failed.error.splitlines() if line.strip()]
    error = lines[-1] if lines else ""
    if len(error) > TITLE_ERROR_CHARS:
        error = error[: TITLE_ERROR_CHARS - 1] + "…"
    head = f"Fix {failed.label}" if failed.label else "Fix the last failed cell"
    return f"{head}: {error}" if error else head


def fix_request(failed: FailedCell, brought: list[str], suggest: list[str]) -> str:
    """The prompt (for the model): the failing source and traceback, and what to do."""
    where = f"cell id={failed.cell_id}" if failed.cell_id else "the cell below"
    parts = [
        f"My last cell ({where}) failed. Fix it.",
        f"```python\n{failed.source}\n```",
        "Traceback:\n```\n" + head_tail(failed.error, MAX_TRACEBACK) + "\n```",
    ]
    if brought:
        parts.append(
            f"{', '.join(brought)} are in your sandbox: reproduce the error with run_cell and "
            "check your fix there first."
        )
    elif suggest:
        parts.append(
            f"(The cell uses {', '.join(suggest)} from my kernel; they are not in your sandbox.)"
        )
    if failed.cell_id:
        parts.append(f"Propose the fix with edit_cell on cell_id {failed.cell_id!r}.")
    return "\n\n".join(parts)
