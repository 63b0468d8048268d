"""The workspace disk budget (``SandboxLimits.disk_mb``): what a workspace holds, and whether
a write still fits.

A budget that counts allocated blocks is beaten by sparse files: a 48 MiB file of one
written byte takes a few KiB on disk, yet every copy of it (a snapshot read, a restore, a
helper's workspace, the copy back) writes all 48 MiB. So the budget counts *apparent*
size, the length of each file (or its blocks, when preallocation makes them more), the
size every copy will have. The walk never follows symbolic links (a link to / would count
the whole machine) and stops after a bounded number of entries, so measuring stays cheap
whatever a cell leaves behind. The top-level ``.codeagent/`` folder is server state, out
of the sandbox's sight and bounded on its own (the snapshot store's limits), so it is not
counted.

Every server-side write into a workspace asks ``check_room`` first, with the bytes it
is about to write, and is refused in one line (``DiskBudgetError``) when they do not fit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import CodeAgentError

MIB = 1024 * 1024
MAX_ENTRIES = 200_000
"""Directory entries looked at per measure; beyond that the usage seen so far is used."""
RESERVED = ".codeagent"
"""The workspace's server-state folder (``confined.RESERVED``), not counted."""


class DiskBudgetError(CodeAgentError):
    """A write was refused before it began: the workspace would pass its disk budget."""


@dataclass(frozen=True)
class OverBudget:
    """The workspace is over its disk budget: the typed reason a run stops on.

    ``reason`` is the sentence the run's ``RunFinished`` carries; the sandbox's note on the
    cell says the same.
    """

    budget_mb: int
    used_bytes: int

    @property
    def reason(self) -> str:
        return (
            f"workspace disk budget of {self.budget_mb} MiB exceeded "
            f"({self.used_bytes / MIB:.0f} MiB used)"
        )


def apparent_bytes(st: os.stat_result) -> int:
    """The bytes a copy of this entry writes: its length, or its blocks if more."""
    return max(st.st_size, getattr(st, "st_blocks", 0) * 512, 0)


def workspace_bytes(root: Path, max_entries: int = MAX_ENTRIES) -> int:
    """Apparent bytes under ``root`` (hard links counted once, ``.codeagent/`` left out)."""
    total, seen, entries = 0, set(), 0
    stack = [(str(root), True)]
    while stack and entries < max_entries:
        path, top = stack.pop()
        try:
            with os.scandir(path) as it:
                for entry in it:
                    entries += 1
                    if entries >= max_entries:
                        break
                    if top and entry.name == RESERVED:
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, False))
                    if st.st_nlink > 1:
                        if (st.st_dev, st.st_ino) in seen:
                            continue
                        seen.add((st.st_dev, st.st_ino))
                    total += apparent_bytes(st)
        except OSError:
            continue
    return total


def over_budget(root: Path, budget_mb: int) -> OverBudget | None:
    """The workspace's excess over ``budget_mb`` MiB, or None when it is within."""
    used = workspace_bytes(root)
    return OverBudget(budget_mb, used) if used > budget_mb * MIB else None


def check_room(
    root: Path, budget_mb: int | None, adding: int, what: str, *, replacing: int = 0
) -> None:
    """Refuse (``DiskBudgetError``, one line) writing ``adding`` bytes of ``what`` into the
    workspace ``root`` when, with the ``replacing`` bytes it overwrites gone, the workspace
    would pass ``budget_mb`` MiB. No budget (None) lets everything through."""
    if budget_mb is None:
        return
    used = workspace_bytes(root) if Path(root).is_dir() else 0
    after = used - replacing + adding
    if after > budget_mb * MIB:
        raise DiskBudgetError(
            f"{what} ({adding / MIB:.1f} MiB) would take the workspace past its disk budget "
            f"of {budget_mb} MiB ({used / MIB:.1f} MiB used); not written"
        )
