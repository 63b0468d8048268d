"""A ``pids`` cgroup per sandbox: the process limit that also holds for root.

RLIMIT_NPROC is ignored for root and counts every process of the user otherwise, so
where a pids controller is writable each kernel gets its own group with ``pids.max``.
The launcher creates and joins it; the provisioner removes it when the kernel is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

_V1_ROOT = Path("/sys/fs/cgroup/pids")
_V2_ROOT = Path("/sys/fs/cgroup")
_GROUP = "codeagent-sandbox"


def _v2_base() -> Path | None:
    """Our own cgroup v2 directory, if it delegates the pids controller to children."""
    try:
        line = next(
            (ln for ln in Path("/proc/self/cgroup").read_text().splitlines() if ln[:3] == "0::"),
            None,
        )
    except OSError:
        return None
    if line is None or not (_V2_ROOT / "cgroup.controllers").exists():
        return None
    base = _V2_ROOT / line[3:].lstrip("/")
    try:
        if "pids" not in (base / "cgroup.subtree_control").read_text().split():
            return None
    except OSError:
        return None
    return base


def cgroup_dir(kernel_id: str) -> Path | None:
    """Where the group for ``kernel_id`` lives on this machine, or None without a pids cgroup."""
    if (_V1_ROOT / "pids.max").exists() or (_V1_ROOT / "cgroup.procs").exists():
        return _V1_ROOT / _GROUP / kernel_id
    base = _v2_base()
    return base / f"{_GROUP}-{kernel_id}" if base else None


def enter(kernel_id: str, max_pids: int) -> bool:
    """Create the group, set ``pids.max`` and move this process into it; False if not possible."""
    path = cgroup_dir(kernel_id)
    if path is None:
        return False
    _sweep(path.parent)
    try:
        path.mkdir(parents=True, exist_ok=True)
        (path / "pids.max").write_text(str(max_pids))
        (path / "cgroup.procs").write_text(str(os.getpid()))
    except OSError:
        return False
    return True


def _sweep(parent: Path, min_age_s: float = 300.0) -> None:
    """Delete empty groups left by servers that were killed before they could clean up."""
    if parent.name != _GROUP:
        return  # cgroup v2 siblings are not ours to judge
    with contextlib.suppress(OSError):
        for group in parent.iterdir():
            if group.is_dir() and time.time() - group.stat().st_mtime > min_age_s:
                with contextlib.suppress(OSError):
                    if not (group / "cgroup.procs").read_text().strip():
                        group.rmdir()


def remove(kernel_id: str, wait_s: float = 2.0) -> None:
    """Kill whatever is left in the group (e.g. forked children) and delete it."""
    path = cgroup_dir(kernel_id)
    if path is None or not path.exists():
        return
    deadline = time.monotonic() + wait_s
    while True:
        try:
            pids = [int(p) for p in (path / "cgroup.procs").read_text().split()]
        except OSError:
            pids = []
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        try:
            path.rmdir()
            break
        except OSError:
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
