"""The workspace disk budget (``SandboxLimits.disk_mb``), checked after every cell.

RLIMIT_FSIZE bounds one file, not how many a cell writes, and a quota needs root and a
filesystem that has them, so the client measures the workspace itself. The walk never
follows symbolic links (a link to / would otherwise count the whole machine) and stops
after a bounded number of entries, so a cell cannot make the check itself expensive.
"""

from __future__ import annotations

import os
from pathlib import Path

_MIB = 1024 * 1024
MAX_ENTRIES = 200_000
"""Directory entries looked at per check; beyond that the usage seen so far is used."""
NOTE_PREFIX = "workspace disk budget of"
"""Start of the note on a cell that exceeded the budget (the agent loop stops on it)."""


def workspace_bytes(root: Path, max_entries: int = MAX_ENTRIES) -> int:
    """Bytes of disk used under ``root`` (allocated blocks; hard links counted once)."""
    total, seen, entries = 0, set(), 0
    stack = [str(root)]
    while stack and entries < max_entries:
        try:
            with os.scandir(stack.pop()) as it:
                for entry in it:
                    entries += 1
                    if entries >= max_entries:
                        break
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    if (st.st_dev, st.st_ino) in seen:
                        continue
                    seen.add((st.st_dev, st.st_ino))
                    total += max(getattr(st, "st_blocks", 0) * 512, 0)
        except OSError:
            continue
    return total


def disk_note(root: Path, budget_mb: int) -> str | None:
    """The note for a workspace over ``budget_mb`` MiB, or None when it is within."""
    used = workspace_bytes(root)
    if used <= budget_mb * _MIB:
        return None
    return f"{NOTE_PREFIX} {budget_mb} MiB exceeded ({used / _MIB:.0f} MiB used)"
