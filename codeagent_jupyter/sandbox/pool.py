"""A few started sandboxes kept ready, so a session does not wait ~1 s for a kernel.

Rules callers rely on: ``acquire`` hands out a sandbox nobody has used; the caller owns
it and shuts it down (it is never returned, so no state leaks between sessions); the
pool refills itself in the background.

Workspace: a sandbox can write only to the directory bound into it at launch, so
changing the kernel's working directory later would not give it write access to a new
one. ``acquire(workdir=...)`` for a directory other than the pool's therefore starts a
fresh sandbox there (a cold start); pooled sandboxes all work in ``pool.workdir``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from ..errors import SandboxError
from .backend import LocalBackend, SandboxBackend
from .demand import Demand
from .kernel import Sandbox
from .preload import preload

log = logging.getLogger(__name__)


class SandboxPool:
    """Keeps ``size`` started sandboxes for ``workdir`` ready to hand out."""

    def __init__(
        self,
        size: int = 2,
        workdir: str | os.PathLike[str] = ".",
        limits: SandboxLimits | None = None,
        backend: SandboxBackend | None = None,
        preload: Sequence[str] = (),
        max_size: int | None = None,
        demand_window_s: float = 60.0,
        **sandbox_options: Any,
    ) -> None:
        """``backend`` makes the sandboxes (default: local kernels with ``sandbox_options``)."""
        if size < 0:
            raise ValueError("pool size must be 0 or more")
        self.size = size
        self.workdir = Path(workdir).resolve()
        self.limits = limits or SandboxLimits()
        self.backend = backend if backend is not None else LocalBackend(**sandbox_options)
        self.demand = Demand(size, size if max_size is None else max_size, demand_window_s)
        """Past ``size`` (up to ``max_size``) the pool keeps what was recently handed out."""
        self.preload = list(preload)
        """Modules each pooled sandbox imports before it is handed out (``preload.py``)."""
        self._ready: deque[Sandbox] = deque()
        self._enforcement: dict[str, Any] | None = None
        self._starting: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Event()
        self._failures = 0
        self._last_error: str | None = None
        self._closed = False

    def _new(self, workdir: Path) -> Sandbox:
        return self.backend.create(workdir, self.limits)  # type: ignore[no-any-return]

    async def start(self, wait: bool = True) -> None:
        """Begin filling the pool; with ``wait``, return once the first fill is done."""
        self._refill()
        if wait and self._starting:
            await asyncio.gather(*self._starting, return_exceptions=True)

    def _refill(self) -> None:
        if self._closed:
            return
        missing = self.demand.target() - len(self._ready) - len(self._starting)
        for _ in range(max(missing, 0)):
            task = asyncio.get_running_loop().create_task(self._start_one())
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _start_one(self) -> None:
        sandbox = self._new(self.workdir)
        try:
            await sandbox.start()
            await preload(sandbox, self.preload)
        except Exception as e:
            self._failures += 1
            self._last_error = str(e) or type(e).__name__
            log.warning("sandbox pool could not start a sandbox: %s", e)
        else:
            if self._closed:
                await sandbox.shutdown()
            else:
                self._ready.append(sandbox)
                self._enforcement = dict(sandbox.enforcement)
        finally:
            # Counted as starting no longer, before anyone wakes up and refills.
            self._starting.discard(asyncio.current_task())  # type: ignore[arg-type]
            self._changed.set()

    async def acquire(self, workdir: str | os.PathLike[str] | None = None) -> Sandbox:
        """A started, unused sandbox working in ``workdir`` (default: the pool's)."""
        if self._closed:
            raise SandboxError("sandbox pool is shut down")
        if workdir is not None and Path(workdir).resolve() != self.workdir:
            sandbox = self._new(Path(workdir))
            await sandbox.start()
            return sandbox
        failures = self._failures
        self.demand.record()
        self._refill()  # a burst raises the target: start more now, not one by one
        while True:
            while self._ready:
                sandbox = self._ready.popleft()
                self._refill()
                if await _responds(sandbox):
                    return sandbox
                await sandbox.shutdown()
            if not self._starting:
                if self.size == 0:
                    sandbox = self._new(self.workdir)
                    await sandbox.start()
                    return sandbox
                self._refill()
            self._changed.clear()
            await self._changed.wait()
            if self._closed:
                raise SandboxError("sandbox pool is shut down")
            if self._failures != failures and not self._ready:
                raise SandboxError(f"could not start a sandbox: {self._last_error}")

    async def trim(self) -> None:
        """Shut down ready sandboxes beyond the demand target (idle since the last burst)."""
        while len(self._ready) > self.demand.target():
            sandbox = self._ready.pop()
            with contextlib.suppress(Exception):
                await sandbox.shutdown()

    def status(self) -> dict[str, Any]:
        """Counts for a health check."""
        return {
            "size": self.size,
            "ready": len(self._ready),
            "starting": len(self._starting),
            "workdir": str(self.workdir),
            "failures": self._failures,
            "last_error": self._last_error,
            "enforcement": self._enforcement,
        }

    async def shutdown(self) -> None:
        """Stop every pooled sandbox, including ones still starting."""
        self._closed = True
        self._changed.set()
        if self._starting:
            await asyncio.gather(*list(self._starting), return_exceptions=True)
        while self._ready:
            sandbox = self._ready.popleft()
            with contextlib.suppress(Exception):
                await sandbox.shutdown()

    async def __aenter__(self) -> SandboxPool:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()


async def _responds(sandbox: Any) -> bool:
    """Alive, and for a remote kernel answering a ``kernel_info`` round trip: a gateway may
    have culled an idle pooled kernel, which an HTTP listing would not show in time."""
    if not sandbox.is_alive():
        return False
    ping = getattr(sandbox, "ping", None)
    return ping is None or bool(await ping())
