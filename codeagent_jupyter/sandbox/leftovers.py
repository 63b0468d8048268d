"""Private kernel folders whose owner was killed before it could remove them.

Each sandbox kernel gets a private folder for its connection file (with the kernel's HMAC
key) and ipc sockets; the provisioner removes it with the kernel. A server or CLI killed with
SIGKILL runs no cleanup: its kernels die with it (bubblewrap's ``--die-with-parent``), but
their folders stay in the temp directory for good. So each folder names its owner
(``owner``: pid and the process's start time, which tells a reused pid apart), and whoever
creates the next folder removes those whose owner is gone.

The temp directory is shared with other users, so only real directories owned by our uid
that carry a well-formed ``owner`` file are considered, and they are removed with
``shutil.rmtree``, which does not follow symlinks planted inside.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import stat
from pathlib import Path

log = logging.getLogger(__name__)

OWNER_FILE = "owner"


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2 :].split()  # the command name may hold spaces
    return fields[19] if len(fields) > 19 else None


def mark_owner(folder: Path) -> None:
    """Say in ``folder`` which process owns it (this one)."""
    pid = os.getpid()
    (folder / OWNER_FILE).write_text(f"{pid} {_start_time(pid) or '?'}\n")


def _owner_gone(folder: str) -> bool:
    # The kernel can write into its folder (its ipc sockets live there): the file may be a
    # symlink, a FIFO or huge. Never follow, never block, read a line's worth.
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    try:
        fd = os.open(os.path.join(folder, OWNER_FILE), flags)
    except OSError:
        return False  # not ours to judge: no owner file (older version, or not started yet)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return False
        parts = f.read(100).decode("ascii", "replace").split()
    if len(parts) != 2 or not parts[0].isdigit():
        return False
    started = _start_time(int(parts[0]))
    return started is None or started != parts[1]


def sweep(base: Path, prefix: str) -> int:
    """Remove ``base/<prefix>*`` folders of ours whose owning process is gone; how many."""
    removed = 0
    uid = os.getuid()
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(prefix)]
    except OSError:
        return 0
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid or not _owner_gone(entry.path):
            continue
        with contextlib.suppress(OSError):
            shutil.rmtree(entry.path)
            removed += 1
    if removed:
        log.info("removed %d kernel folder(s) left by killed processes in %s", removed, base)
    return removed
