"""The workspace disk budget (``SandboxLimits.disk_mb``): what a workspace holds, and whether
a write still fits.

A budget that counts allocated blocks is beaten by sparse files: a 48 MiB file of one
written byte takes a few KiB on disk, yet every copy of it (a snapshot read, a restore, a
helper's workspace, the copy back) writes all 48 MiB. So the budget counts *apparent*
size, the length of each file (or its blocks, when preallocation makes them more), the
size every copy will have. The walk never follows symbolic links (a link to / would count
the whole machine) and stops after a bounded number of entries, so measuring stays cheap
whatever a cell leaves behind. A walk that cannot finish (past that many entries, a folder
it may not read, a folder met twice) fails closed: the workspace counts as over its budget,
with one line saying why (``Usage.unmeasured``). The top-level ``.codeagent/`` folder is
server state, out of the sandbox's sight and bounded on its own (the snapshot store's
limits), so it is not counted.

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
"""Directory entries looked at per measure; a workspace with more counts as over budget."""
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
    unmeasured: str = ""
    """Why the workspace could not be measured (then it counts as over), or empty."""

    @property
    def reason(self) -> str:
        if self.unmeasured:
            return (
                f"workspace disk budget of {self.budget_mb} MiB counted as exceeded: "
                f"{self.unmeasured}"
            )
        return (
            f"workspace disk budget of {self.budget_mb} MiB exceeded "
            f"({_over_mib(self.used_bytes, self.budget_mb)} MiB used)"
        )


def _over_mib(used_bytes: int, budget_mb: int) -> str:
    """``used_bytes`` in MiB, whole where that still reads as more than the budget.

    A run stopped mid-write may be just over (2.1 MiB of 2): "2 MiB used" would read as
    within the budget, so the figure keeps as many decimals as it takes to tell the two
    apart (a writer stopped within a few KiB of 16 MiB reads "16.004", not "16.0").
    """
    for places in range(7):
        shown = f"{used_bytes / MIB:.{places}f}"
        if float(shown) > budget_mb:
            return shown
    return shown


@dataclass(frozen=True)
class Usage:
    """What a walk found: apparent bytes, and why it could not finish (empty when it did)."""

    used_bytes: int
    unmeasured: str = ""

    def over(self, budget_mb: int) -> OverBudget | None:
        """The excess over ``budget_mb`` MiB (an unfinished walk always is), or None."""
        if self.unmeasured or self.used_bytes > budget_mb * MIB:
            return OverBudget(budget_mb, self.used_bytes, self.unmeasured)
        return None


def apparent_bytes(st: os.stat_result) -> int:
    """The bytes a copy of this entry writes: its length, or its blocks if more."""
    return max(st.st_size, getattr(st, "st_blocks", 0) * 512, 0)


def measure(
    root: Path,
    max_entries: int = MAX_ENTRIES,
    skip: frozenset[str] = frozenset({RESERVED}),
    sizes: dict[str, int] | None = None,
    folders: list[str] | None = None,
) -> Usage:
    """Apparent bytes under ``root``: hard links counted once, top-level names in ``skip``
    (``.codeagent/``) left out. ``sizes``, when given, receives each counted path's bytes
    (a hard link's second path: 0), the starting point of ``disk_guard``'s running count;
    ``folders`` each folder's path.

    Fails closed: past ``max_entries`` entries, a folder that cannot be listed (other than
    one deleted meanwhile) or a folder met twice, the walk stops and says why."""
    total, seen, dirs, entries = 0, set(), set(), 0
    stack = [(str(root), True)]
    while stack:
        path, top = stack.pop()
        try:
            st_dir = os.stat(path, follow_symlinks=False)
            if (st_dir.st_dev, st_dir.st_ino) in dirs:
                return Usage(total, f"the folder {Path(path).name!r} was met twice (a loop)")
            dirs.add((st_dir.st_dev, st_dir.st_ino))
            with os.scandir(path) as it:
                for entry in it:
                    entries += 1
                    if entries > max_entries:
                        return Usage(total, f"more than {max_entries:,} entries to measure")
                    if top and entry.name in skip:
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, False))
                        if folders is not None:
                            folders.append(entry.path)
                    size = apparent_bytes(st)
                    if st.st_nlink > 1 and not entry.is_dir(follow_symlinks=False):
                        if (st.st_dev, st.st_ino) in seen:
                            size = 0
                        seen.add((st.st_dev, st.st_ino))
                    total += size
                    if sizes is not None:
                        sizes[entry.path] = size
        except FileNotFoundError:
            continue  # deleted while we walked: nothing left to count
        except OSError as e:
            return Usage(total, f"a folder could not be measured ({e.strerror or e})")
    return Usage(total)


def measure_all(roots: list[tuple[Path, frozenset[str]]]) -> Usage:
    """Several places the sandbox writes, counted as one budget (``Sandbox.disk_roots``)."""
    total = 0
    for root, skip in roots:
        usage = measure(root, skip=skip)
        if usage.unmeasured:
            return Usage(total + usage.used_bytes, usage.unmeasured)
        total += usage.used_bytes
    return Usage(total)


def workspace_bytes(root: Path, max_entries: int = MAX_ENTRIES) -> int:
    """Apparent bytes under ``root`` as far as a walk gets (``measure`` says if it did)."""
    return measure(root, max_entries).used_bytes


def over_budget(root: Path, budget_mb: int) -> OverBudget | None:
    """The workspace's excess over ``budget_mb`` MiB, or None when it is within; a
    workspace that cannot be measured is over."""
    return measure(root).over(budget_mb)


def check_room(
    root: Path, budget_mb: int | None, adding: int, what: str, *, replacing: int = 0
) -> None:
    """Refuse (``DiskBudgetError``, one line) writing ``adding`` bytes of ``what`` into the
    workspace ``root`` when, with the ``replacing`` bytes it overwrites gone, the workspace
    would pass ``budget_mb`` MiB. No budget (None) lets everything through."""
    if budget_mb is None:
        return
    usage = measure(root) if Path(root).is_dir() else Usage(0)
    used = usage.used_bytes
    if usage.unmeasured:
        raise DiskBudgetError(
            f"{what} ({adding / MIB:.1f} MiB) not written: the workspace's disk budget of "
            f"{budget_mb} MiB cannot be checked ({usage.unmeasured})"
        )
    after = used - replacing + adding
    if after > budget_mb * MIB:
        raise DiskBudgetError(
            f"{what} ({adding / MIB:.1f} MiB) would take the workspace past its disk budget "
            f"of {budget_mb} MiB ({used / MIB:.1f} MiB used); not written"
        )
