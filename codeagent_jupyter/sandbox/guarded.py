"""The local sandbox's side of the lifelong disk budget: what is counted, and what is stopped.

``Sandbox`` starts a ``DiskGuard`` with the kernel and ends it at shutdown, so the budget
holds between calls as well as during them. Counted: the workspace (less its ``.codeagent``
server state, which the sandbox cannot see) and the kernel's own private folder, bound
read-write into the sandbox for its sockets (less the package overlay, which it sees
read-only and the host fills under the install caps). The sandbox's ``/tmp`` is a tmpfs
capped at launch, so it needs no count.

When the guard finds the budget passed it kills every process of the sandbox at once
(``stop.kill_sandbox``): a writer that detached itself dies with the kernel. A cell that was
running ends as "died" with the budget as its reason; between calls, the next call finds
the sandbox stopped and runs nothing while the workspace is still over (``idle_refusal``).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from ..core.ports import ExecResult
from ..util.disk_budget import RESERVED, OverBudget, measure_all
from .disk_guard import DiskGuard, Roots
from .overlay import PACKAGES_DIR
from .stop import groups, kill_sandbox

STOPPED = "the sandbox's processes were stopped"
SETTLE_S = 30.0
"""Longest wait for the guard's first walk after a restart (a walk ends at its entry cap)."""


class GuardedKernel:
    """Mixin for ``Sandbox``: needs ``workdir``, ``limits``, ``private_dir``, ``_km``."""

    workdir: Path
    limits: SandboxLimits
    _km: Any
    enforcement: dict[str, Any]
    disk_watch_s: float | None
    _guard: DiskGuard | None = None
    _crossed: OverBudget | None = None
    _pgids: dict[int, str] | None = None

    @property
    def private_dir(self) -> Path | None:
        raise NotImplementedError

    def disk_roots(self) -> Roots:
        """Every place this sandbox can write that lasts beyond a cell, as the budget counts."""
        roots: Roots = [(self.workdir, frozenset({RESERVED}))]
        private = self.private_dir
        if private is not None:
            roots.append((private, frozenset({PACKAGES_DIR})))
        return roots

    def _start_guard(self) -> None:
        """Guard the budget from now to ``_stop_guard`` (not when ``disk_watch_s`` is None:
        the check after each cell only)."""
        process = getattr(getattr(self._km, "provisioner", None), "process", None)
        self._pgids = groups(process.pid) if process is not None else None
        if self._guard is None and self.disk_watch_s is not None:
            self._guard = DiskGuard(self.disk_roots(), self.limits.disk_mb, self._over)
            self._guard.start()
        elif self._guard is not None:
            self._guard.roots = self.disk_roots()
            self._guard.rearm()

    def _stop_guard(self) -> None:
        if self._guard is not None:
            self._guard.stop()
            self._guard = None

    def _over(self, over: OverBudget) -> None:
        """In the guard's thread: the budget is passed, so nothing of the sandbox may run."""
        km = self._km
        stop_now = getattr(km, "stop_now", None)
        if stop_now is not None:  # a zygote's fork: no launcher of ours to kill
            stop_now()
        process = getattr(getattr(km, "provisioner", None), "process", None)
        namespace = self.enforcement.get("pid") in ("bwrap", "unshare")
        pid, kernel_id = getattr(process, "pid", None), getattr(km, "kernel_id", None)
        kill_sandbox(pid, kernel_id, namespace, self._pgids)
        deadline = time.monotonic() + SETTLE_S
        while process is not None and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)  # gone before the next call asks whether the kernel is alive

    def stopped_for(self) -> OverBudget | None:
        """Why the guard stopped the sandbox's processes, until it was restarted."""
        return self._guard.fired if self._guard is not None else None

    def stop_reason(self, fallback: str, during_call: bool) -> str:
        """What ended the kernel: the budget when the guard stopped it, else ``fallback``.
        A stop ``during_call`` is that call's over-budget reason (``crossed``), even where
        the files shrink back below the budget once their writers are dead."""
        over = self.stopped_for()
        if over is None:
            return fallback
        if during_call:
            self._crossed = over
        return f"{over.reason}; {STOPPED}"

    def crossed(self) -> OverBudget | None:
        """The budget the guard stopped the current call for (then forgotten), or None."""
        over, self._crossed = self._crossed, None
        return over

    async def idle_refusal(self) -> ExecResult | None:
        """The result of a call that finds the sandbox stopped for its budget and the
        workspace still over it: nothing runs. None when it may run (after a restart).
        Right after a restart, or while the guard is still counting a flood of writes, it
        is awaited (off the loop), so a workspace over its budget stops the call here
        rather than midway."""
        guard = self._guard
        if guard is not None and guard.behind():
            await asyncio.to_thread(guard.wait_caught_up, SETTLE_S)
        if self.stopped_for() is None:
            return None
        over = measure_all(self.disk_roots()).over(self.limits.disk_mb)
        if over is None:
            return None
        note = f"{over.reason}; {STOPPED} between calls; nothing ran"
        return ExecResult(status="error", note=note, over_budget=over)
