"""The disk budget for a sandbox's whole life: counted on every write, not only during a call.

A budget measured only while a cell runs let a detached writer (double fork, ``setsid``,
signals ignored) fill the disk between calls, and a quarter-second poll let four writers
put twenty budgets on disk before it looked. ``DiskGuard`` is one thread per sandbox, from
its start to its shutdown, that keeps a running count of every place the sandbox writes:

- a full walk (``util.disk_budget.measure``) gives each path's apparent bytes and puts an
  inotify watch on each folder; the walk is repeated every ``WALK_S`` (stretched so walks
  take at most ``MAX_SHARE`` of one CPU) to reconcile, and fails closed (too many entries,
  an unreadable folder: over budget, with one line saying why);
- between walks, each write, truncate, create, delete or move the kernel reports for a
  watched folder re-reads that one path, so the count follows the writers within one
  scheduling delay instead of one poll interval;
- once the count passes the budget, ``on_over`` runs (in this thread): the sandbox kills
  its processes. The guard then stays quiet until ``rearm`` (the sandbox was restarted).

Where inotify is missing or its watches run out (``MAX_WATCHES``, or the system's
``max_user_watches``), the guard falls back to walking every ``INTERVAL_S``: the budget
still holds, with the overshoot of a timer (docs/security.md states both).
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import os
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..util.disk_budget import MAX_ENTRIES, MIB, OverBudget, Usage, apparent_bytes, measure
from .disk import INTERVAL_S, MAX_SHARE

try:
    from inotify_simple import INotify
    from inotify_simple import flags as F
except (ImportError, OSError):  # not Linux: the timer alone
    INotify = None  # type: ignore[assignment,misc]

Roots = list[tuple[Path, frozenset[str]]]
"""Each place the sandbox writes, with the top-level names in it that are not counted."""

WALK_S = 2.0
"""Seconds between full walks while inotify follows the writes (they only reconcile)."""
MAX_WATCHES = 20_000
"""Folders watched per sandbox; beyond that, the timer (``INTERVAL_S``) alone."""
BUSY_EVENTS = 256
"""Events in one read that mean writers are busy: a call waits until the count catches up."""
_WAIT_MS = 500
"""Longest wait for an event, so ``stop`` is noticed within half a second."""


class DiskGuard:
    """Watches ``roots`` against ``budget_mb`` from ``start`` to ``stop``; see the module."""

    def __init__(self, roots: Roots, budget_mb: int, on_over: Callable[[OverBudget], None]) -> None:
        self.roots = roots
        self.budget_mb = budget_mb
        self.on_over = on_over
        self.fired: OverBudget | None = None
        """What the guard stopped the sandbox for, until ``rearm``."""
        self.mode = "timer"
        """``inotify`` while every folder is watched, else ``timer``."""
        self.settled = threading.Event()
        """Set once the first walk since ``start`` or ``rearm`` is done (or fired)."""
        self.caught_up = threading.Event()
        """Cleared while a flood of events (``BUSY_EVENTS`` at once) is being counted."""
        self.caught_up.set()
        self._fd = -1
        self._stop = threading.Event()
        self._armed = threading.Event()
        self._armed.set()
        self._sizes: dict[str, int] = {}
        self._dirs: dict[int, str] = {}
        self._watched: set[str] = set()
        self._total = 0
        self._thread = threading.Thread(target=self._loop, name="codeagent-disk", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End the watch; the thread notices within ``_WAIT_MS`` and closes its watches."""
        self._stop.set()
        self._armed.set()
        self.settled.set()
        self.caught_up.set()

    def behind(self) -> bool:
        """Whether writes have happened that the count does not include yet: events not
        read yet (the kernel's queue, ``FIONREAD``), or a flood or loss still being made up
        for (``caught_up``), or no first walk yet (``settled``)."""
        if not (self.settled.is_set() and self.caught_up.is_set()):
            return True
        fd, queued = self._fd, array.array("i", [0])
        if fd < 0:
            return False
        with contextlib.suppress(OSError):
            fcntl.ioctl(fd, termios.FIONREAD, queued)
        return queued[0] > 0 and self._armed.is_set()

    def wait_caught_up(self, timeout: float) -> None:
        """Block (a worker thread, never the event loop) until ``behind`` is False."""
        deadline = time.monotonic() + timeout
        while self.behind() and time.monotonic() < deadline and not self._stop.is_set():
            time.sleep(0.01)

    def rearm(self) -> None:
        """The sandbox was restarted: measure again from scratch and guard it anew."""
        self.settled.clear()
        self.fired = None
        self._armed.set()

    def _fire(self, over: OverBudget) -> None:
        """Stop the sandbox; a call that starts meanwhile waits (``settled``) until it is."""
        self.settled.clear()
        self.fired = over
        self._armed.clear()
        with contextlib.suppress(Exception):  # the guard must outlive a failing stop
            self.on_over(over)
        self.settled.set()
        self.caught_up.set()

    def _loop(self) -> None:
        notify = None
        if INotify is not None:
            with contextlib.suppress(OSError):
                notify = INotify()
                self._fd = notify.fileno()
        try:
            while not self._stop.is_set():
                self._armed.wait()
                if self._stop.is_set():
                    break
                self._guard(notify)
        finally:
            self._fd = -1
            if notify is not None:
                notify.close()

    def _guard(self, notify: INotify | None) -> None:
        """Walk, then follow events until the next walk is due, over budget, or stopped."""
        began = time.perf_counter()
        usage = self._walk(notify)
        took = time.perf_counter() - began
        over = usage.over(self.budget_mb)
        if over is not None:
            self._fire(over)
            return
        self.settled.set()
        self.caught_up.set()
        stale = False
        every = WALK_S if self.mode == "inotify" else INTERVAL_S
        due = time.monotonic() + max(every, took / MAX_SHARE - took)
        while not self._stop.is_set() and self._armed.is_set():
            left = due - time.monotonic()
            if left <= 0:
                return
            if notify is None:
                time.sleep(min(left, _WAIT_MS / 1000))
                continue
            events = notify.read(timeout=int(min(left * 1000, _WAIT_MS)) + 1)
            lost = self._follow(notify, events)
            if not self._armed.is_set():
                return  # fired: the sandbox is stopped
            if lost:
                # Events were lost: walk again, but leave the writers at least half the
                # time (a flood of files would otherwise be walked over and over). The
                # count is stale until then: a call waits for that walk.
                due = min(due, time.monotonic() + took)
                stale = True
            if stale or len(events) >= BUSY_EVENTS:
                self.caught_up.clear()
            else:
                self.caught_up.set()
            if self._total > self.budget_mb * MIB:
                self._fire(OverBudget(self.budget_mb, self._total))
                return

    def _walk(self, notify: INotify | None) -> Usage:
        """Every root measured afresh; each folder watched (up to ``MAX_WATCHES``)."""
        self._sizes, self._dirs, self._watched, total = {}, {}, set(), 0
        self.mode = "inotify" if notify is not None else "timer"
        for root, skip in self.roots:
            sizes: dict[str, int] = {}
            folders: list[str] = []
            usage = measure(root, skip=skip, sizes=sizes, folders=folders)
            total += usage.used_bytes
            if usage.unmeasured:
                return Usage(total, usage.unmeasured)
            self._sizes.update(sizes)
            if notify is not None:
                for path in [str(root), *folders]:
                    self._watch(notify, path)
        self._total = total
        return Usage(total)

    def _watch(self, notify: INotify, path: str) -> None:
        if self.mode == "timer" or path in self._watched:
            return
        if len(self._watched) >= MAX_WATCHES:
            self.mode = "timer"
            return
        # A write, truncate or fallocate is a MODIFY; an entry comes and goes by the rest.
        mask = (F.MODIFY | F.CREATE | F.DELETE | F.MOVED_FROM | F.MOVED_TO) | (
            F.DONT_FOLLOW | F.ONLYDIR | F.EXCL_UNLINK
        )
        try:
            self._dirs[notify.add_watch(path, mask)] = path
            self._watched.add(path)
        except OSError:  # gone meanwhile, or the system's watches are used up
            if os.path.isdir(path):
                self.mode = "timer"

    def _follow(self, notify: INotify, events: list) -> bool:
        """Bring the running count up to date with ``events`` (each path re-read once per
        batch), firing as soon as it passes the budget; True when a walk is due."""
        pending: dict[tuple[int, str], int] = {}
        lost = False
        for event in events:
            lost = lost or bool(event.mask & F.Q_OVERFLOW)
            if event.name:
                key = (event.wd, event.name)
                pending[key] = pending.get(key, 0) | event.mask
        for (wd, name), mask in pending.items():
            folder = self._dirs.get(wd)
            if folder is None or self._skipped(folder, name):
                continue
            path = os.path.join(folder, name)
            if mask & F.ISDIR and mask & (F.DELETE | F.MOVED_FROM):
                self._forget(path, below=True)
            self._recount(notify, path)
            if not self._armed.is_set():
                return False
            if self._total > self.budget_mb * MIB:
                self._fire(OverBudget(self.budget_mb, self._total))
                return False
        return lost

    def _skipped(self, folder: str, name: str) -> bool:
        return any(folder == str(root) and name in skip for root, skip in self.roots)

    def _forget(self, path: str, below: bool) -> None:
        self._total -= self._sizes.pop(path, 0)
        self._watched.discard(path)
        if below:  # a folder moved away takes everything under it
            prefix = path + os.sep
            for gone in [p for p in self._sizes if p.startswith(prefix)]:
                self._total -= self._sizes.pop(gone)
                self._watched.discard(gone)

    def _recount(self, notify: INotify, path: str) -> None:
        try:
            st = os.lstat(path)
        except OSError:
            self._forget(path, below=False)
            return
        new = apparent_bytes(st)
        self._total += new - self._sizes.get(path, 0)
        self._sizes[path] = new
        if len(self._sizes) > MAX_ENTRIES:
            unmeasured = f"more than {MAX_ENTRIES:,} entries to measure"
            self._fire(OverBudget(self.budget_mb, self._total, unmeasured))
            return
        if path not in self._watched and os.path.isdir(path) and not os.path.islink(path):
            self._adopt(notify, path)

    def _adopt(self, notify: INotify, folder: str) -> None:
        """A folder made or moved in: watched, and what it already holds counted."""
        self._watch(notify, folder)
        sizes: dict[str, int] = {}
        folders: list[str] = []
        usage = measure(Path(folder), skip=frozenset(), sizes=sizes, folders=folders)
        if usage.unmeasured:
            self._fire(OverBudget(self.budget_mb, self._total, usage.unmeasured))
            return
        for path, size in sizes.items():
            self._total += size - self._sizes.get(path, 0)
            self._sizes[path] = size
        for path in folders:
            self._watch(notify, path)
