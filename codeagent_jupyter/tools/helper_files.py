"""The files between a parent's workspace and its helpers': the copy out and the copy back.

A helper starts from a snapshot of the parent's workspace restored into a fresh folder of
its own, and what it wrote or changed comes back under ``delegates/<label>/`` of the
parent. Both copies write every byte of every file (a sparse file is written densely), so
both are held to the workspace disk budget *before* the first byte: a copy that would not
fit is refused in one line (``DiskBudgetError``) and writes nothing. Files are read and
written through ``confined.Workspace``, so nothing a helper's code planted is followed.
"""

from __future__ import annotations

from pathlib import Path

from ..core.ports import SnapshotPort
from ..util.confined import ConfinementError, Workspace
from ..util.disk_budget import check_room

MAX_FILES_BACK = 200
"""Changed files one helper brings back at most."""


def copy_out(store: SnapshotPort, seed: str, ws: Path, budget_mb: int | None) -> None:
    """The parent's files as of snapshot ``seed``, into the helper's empty ``ws``."""
    store.restore(seed, ws, budget_mb=budget_mb)


def copy_back(
    store: SnapshotPort,
    ws: Path,
    seed: str,
    parent: Path,
    label: str,
    budget_mb: int | None,
    session: str | None = None,
) -> list[str]:
    """Copy what the helper in ``ws`` wrote or changed since ``seed`` into
    ``parent/delegates/<label>/``: all of it, or nothing (``DiskBudgetError``) when it
    would take the parent past ``budget_mb``. The paths copied, parent-relative."""
    changed = store.capture(ws, seed, session=session)
    source, target = Workspace(ws), Workspace(parent)
    limit = store.settings.large_file_bytes
    paths, adding = [], 0
    for path in changed.changed[:MAX_FILES_BACK]:
        try:
            size = source.stat(path).st_size
        except (ConfinementError, OSError):
            continue
        if size <= limit:  # a larger file is referenced by the snapshot, not copied
            paths.append(path)
            adding += size
    check_room(parent, budget_mb, adding, f"the files of helper {label}")
    copied = []
    for path in paths:
        try:
            data = source.read_bytes(path, limit)
            target.write_bytes(f"delegates/{label}/{path}", data)
        except (ConfinementError, OSError):
            continue
        copied.append(f"delegates/{label}/{path}")
    return copied
