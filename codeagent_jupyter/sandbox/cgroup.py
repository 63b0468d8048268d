"""A cgroup per sandbox: process and total-memory limits that also hold for root.

RLIMIT_NPROC is ignored for root (and counts every process of the user otherwise), and
RLIMIT_DATA is per process, so where a cgroup controller is writable each kernel gets
its own group with ``pids.max`` and a memory ceiling for the kernel plus everything it
starts. Groups are created under the caller's own cgroup (that is often the only part
of the tree a container may write). The launcher creates and joins them; the
provisioner removes them when the kernel is gone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

_ROOT = Path("/sys/fs/cgroup")
_GROUP = "codeagent-sandbox"
CONTROLLERS = ("pids", "memory")


def _own_paths() -> dict[str, str]:
    """Controller (or "" for cgroup v2) -> this process's cgroup path."""
    found: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for name in controllers.split(",") if controllers else [""]:
                found[name] = path.lstrip("/")
    return found


def group_dirs(kernel_id: str) -> dict[str, Path]:
    """Controller -> directory of the group for ``kernel_id`` (only where one can exist)."""
    own = _own_paths()
    dirs: dict[str, Path] = {}
    for name in CONTROLLERS:
        if name in own and (_ROOT / name / "cgroup.procs").exists():
            dirs[name] = _ROOT / name / own[name] / _GROUP / kernel_id
    if not dirs and "" in own and (_ROOT / "cgroup.controllers").exists():
        base = _ROOT / own[""]
        with contextlib.suppress(OSError):
            enabled = (base / "cgroup.subtree_control").read_text().split()
            for name in CONTROLLERS:
                if name in enabled:
                    dirs[name] = base / f"{_GROUP}-{kernel_id}"
    return dirs


def _limit_files(name: str, path: Path, value: int) -> list[tuple[Path, str]]:
    if name == "pids":
        return [(path / "pids.max", str(value))]
    if (path / "memory.max").exists():  # v2
        return [(path / "memory.max", str(value)), (path / "memory.swap.max", "0")]
    files = [(path / "memory.limit_in_bytes", str(value))]
    if (path / "memory.memsw.limit_in_bytes").exists():
        files.append((path / "memory.memsw.limit_in_bytes", str(value)))
    return files


def enter(kernel_id: str, limits: dict[str, int], pid: int | None = None) -> set[str]:
    """Create the groups, set their limits and move this process (or ``pid``, a zygote's
    fork that waits for it) in; returns what worked.

    ``limits`` maps a controller to its ceiling (``pids``: tasks, ``memory``: bytes).
    """
    applied: set[str] = set()
    for name, path in group_dirs(kernel_id).items():
        if name not in limits:
            continue
        _sweep(path.parent)
        try:
            path.mkdir(parents=True, exist_ok=True)
            for file, value in _limit_files(name, path, limits[name]):
                if file.exists():
                    file.write_text(value)
            (path / "cgroup.procs").write_text(str(pid or os.getpid()))
        except OSError:
            continue
        applied.add(name)
    return applied


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
    """Kill whatever is left in the groups (e.g. forked children) and delete them."""
    for path in set(group_dirs(kernel_id).values()):
        if path.exists():
            _remove_one(path, time.monotonic() + wait_s)


def kill_members(kernel_id: str) -> None:
    """SIGKILL every process in the kernel's groups now, and leave the groups in place (the
    kernel manager restarts into them or removes them)."""
    for path in set(group_dirs(kernel_id).values()):
        with contextlib.suppress(OSError):
            (path / "cgroup.kill").write_text("1")
        with contextlib.suppress(OSError, ValueError):
            for pid in (path / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)


def _remove_one(path: Path, deadline: float) -> None:
    """Kill the whole group (double-forked daemons included), then delete it.

    cgroup v2 kills every member atomically through ``cgroup.kill``; elsewhere each
    listed pid is killed, again and again until the group is empty, so a process that
    forks while being killed is caught on the next round.
    """
    with contextlib.suppress(OSError):
        (path / "cgroup.kill").write_text("1")
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
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
