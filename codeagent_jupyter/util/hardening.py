"""Process hardening for the processes that hold the API key (the server, the CLI).

A sandbox that runs as the same user (the unconfined fallback, a student's kernel on a
hub) could otherwise read ``/proc/<pid>/environ`` of its parent, or ``ptrace`` it. With
``PR_SET_DUMPABLE`` cleared the kernel makes those files root-owned and refuses ptrace
from same-user processes; it costs nothing and changes nothing else the process does.
"""

from __future__ import annotations

import ctypes
import sys

_PR_SET_DUMPABLE = 4
_PR_GET_DUMPABLE = 3


def make_undumpable() -> bool:
    """Clear this process's dumpable flag; True when it is now cleared (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
        return bool(libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False
