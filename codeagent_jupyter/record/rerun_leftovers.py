"""Files a resume's re-run of the cells created that the restored step never had.

``restore.rebuild`` re-runs a session's cells to give the kernel its variables back, then
restores the step's snapshot once more. A restore only writes the snapshot's files, so a
file the re-run (re)created that the step did not have stayed behind: a file the session
made and the user reverted ("Revert this file") came back on every resume. ``before``
lists the workspace's regular files ahead of the re-run; ``remove_new`` then removes,
through the confined workspace, each regular file that is neither in that list nor in the
snapshot (nor left out of it, as a file too many for a full store). Nothing the user had
before the re-run is touched; links, FIFOs and special files are never followed or removed.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from ..util.confined import ConfinementError, Workspace
from ..util.confined_remove import remove_file


def before(target: Path) -> frozenset[str] | None:
    """The regular files under ``target`` now (None when it cannot be listed)."""
    try:
        return frozenset(e.path for e in Workspace(target).walk() if e.kind == "file")
    except (ConfinementError, OSError):
        return None


def remove_new(target: Path, had: frozenset[str] | None, snapshot: Collection[str]) -> list[str]:
    """Remove the regular files neither in ``had`` nor in ``snapshot`` (the paths the
    snapshot holds or skipped); the paths removed. Problems are passed over: this only
    tidies up."""
    if had is None:
        return []
    ws = Workspace(target)
    try:
        now = [e.path for e in ws.walk() if e.kind == "file"]
    except (ConfinementError, OSError):
        return []
    removed = []
    for path in now:
        if path in had or path in snapshot:
            continue
        try:
            remove_file(ws, path)
        except (ConfinementError, OSError):
            continue
        removed.append(path)
    return removed
