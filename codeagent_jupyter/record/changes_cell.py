"""The session notebook's last cell: what the session did to the workspace's files.

``ChangesCell`` is an event sink subscribed *after* the notebook recorder. When a run ends
(the recorder has added the answer), it computes the session's change set from its
snapshots and puts it, as one markdown cell (``changes_text.markdown``), at the end of the
notebook, replacing the cell an earlier run (or a revert) left, then saves. A session that
changed no file and sent no request through its egress broker gets no such cell. The cell
carries ``metadata.codeagent.kind == "changes"`` and no step: it is read by people, never
re-run, and no event refers to it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_markdown_cell

from .. import events as ev
from .changes import ChangeSet, NoSnapshots, session_changes
from .changes_text import CELL_KIND, markdown

log = logging.getLogger(__name__)


class ChangesCell:
    """Keeps ``recorder``'s notebook ending with the change set read from ``store``."""

    def __init__(self, store: Any, recorder: Any, exclude: frozenset[str] = frozenset()) -> None:
        self.store = store
        self.recorder = recorder
        self.exclude = exclude
        """Workspace paths left out: the session notebook itself, when it is in there."""
        self.last: ChangeSet | None = None
        """The change set at the end of the last run (None: no snapshots, or it failed)."""

    def emit(self, event: ev.Event) -> None:
        if isinstance(event, ev.RunFinished):
            self.update()

    def update(self) -> ChangeSet | None:
        """Recompute, place the cell and save; the change set. Never raises: the cell is a
        summary, not worth a failed run."""
        meta = self.recorder.notebook.metadata["codeagent"]
        try:
            self.last = session_changes(meta, self.store, exclude=self.exclude)
        except NoSnapshots:
            self.last = None
        except Exception:
            log.exception("the session's change set could not be computed")
            self.last = None
        place(self.recorder.notebook, self.last)
        self.recorder.save()
        return self.last

    def line(self) -> str | None:
        """The one-line summary (``3 files changed: …``), or None without snapshots."""
        return self.last.summary() if self.last is not None else None


def place(notebook: Any, changes: ChangeSet | None) -> None:
    """Drop the notebook's change-set cell and, if files changed, append a fresh one."""
    notebook.cells = [c for c in notebook.cells if not is_changes_cell(c)]
    if changes is None or not (changes.files or changes.network):
        return
    cell = new_markdown_cell(markdown(changes))
    runs = notebook.metadata.get("codeagent", {}).get("runs") or [{}]
    cell.metadata["codeagent"] = {"run": max(len(runs) - 1, 0), "kind": CELL_KIND}
    nbformat.validate(cell, ref="markdown_cell", version=4)
    notebook.cells.append(cell)


def inside(workdir: Path, *paths: Path | None) -> frozenset[str]:
    """Those of ``paths`` that lie in ``workdir``, as workspace paths (for ``exclude``)."""
    root = Path(workdir).resolve()
    found = set()
    for path in paths:
        if path is None:
            continue
        full = Path(path).resolve()
        if full.is_relative_to(root):
            found.add(full.relative_to(root).as_posix())
    return frozenset(found)


def is_changes_cell(cell: Any) -> bool:
    return bool(cell.metadata.get("codeagent", {}).get("kind") == CELL_KIND)
