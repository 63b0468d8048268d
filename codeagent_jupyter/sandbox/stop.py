"""Stopping every process of one sandbox at once, wherever they went.

A cell's process can double-fork and ``setsid`` away from the kernel; it still belongs to
the sandbox, and the disk budget (``disk_guard``) must be able to end it. Three nets, each
catching what the one before may not:

- the process groups the kernel's processes were in when it started: one signal each;
- the launcher's process: under bubblewrap or ``unshare`` it heads a pid namespace whose
  first process dies with it (``--die-with-parent``, ``--kill-child``), and the kernel then
  kills everything else in that namespace, detached or not;
- its descendants as the host sees them, for a sandbox without a pid namespace (unconfined);
- the members of the kernel's cgroup (``cgroup.kill_members``), where one exists.

A process that left all three (unconfined, no cgroup, reparented to the host's init) is out
of reach: docs/security.md says so.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

from . import cgroup


def descendants(pid: int) -> list[int]:
    """``pid``'s children, grandchildren … as the host's ``/proc`` shows them now: through
    each task's ``children`` list where the kernel keeps one (a few reads, so the kill
    follows the finding within a millisecond), else one pass over every process."""
    if not Path(f"/proc/self/task/{os.getpid()}/children").exists():
        return _scan(pid)
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{parent}/task"):
                with contextlib.suppress(OSError, ValueError):
                    children = Path(f"/proc/{parent}/task/{task}/children").read_text().split()
                    found += [int(c) for c in children]
                    todo += [int(c) for c in children]
    return found


def _scan(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def started_at(pid: int) -> str | None:
    """When process ``pid`` started (``/proc/PID/stat`` field 22): with the pid, who it is."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def groups(pid: int) -> dict[int, str]:
    """The process groups of ``pid`` and its descendants now (never the caller's own), each
    with its leader's start time: one ``killpg`` each reaches at once every process that
    stayed in them, and the start time proves later that the number is still theirs."""
    found: dict[int, str] = {}
    for member in [pid, *descendants(pid)]:
        with contextlib.suppress(OSError):
            pgid = os.getpgid(member)
            started = started_at(pgid)
            if pgid != os.getpgrp() and started is not None:
                found[pgid] = started
    return found


def kill_sandbox(
    pid: int | None,
    kernel_id: str | None,
    pid_namespace: bool,
    pgids: dict[int, str] | None = None,
) -> None:
    """SIGKILL the sandbox whose launcher is ``pid`` and all it started (see the module).

    ``pgids`` (``groups``, taken when the kernel started) go first: one signal each stops
    every process still in them, writers included, before any exit has to be scheduled;
    a group whose leader is gone is left to the other nets (its number could be reused).
    With a ``pid_namespace`` the launcher goes next (its namespace dies with it); without
    one its descendants are listed before it dies, while they are still below it."""
    for pgid, started in (pgids or {}).items():
        if started_at(pgid) == started:
            with contextlib.suppress(OSError):
                os.killpg(pgid, signal.SIGKILL)
    if pid is not None and pid_namespace:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    elif pid is not None:
        below = descendants(pid)
        for target in [pid, *below]:
            with contextlib.suppress(OSError):
                os.kill(target, signal.SIGKILL)
    if kernel_id:
        cgroup.kill_members(kernel_id)
