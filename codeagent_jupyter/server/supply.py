"""Where sessions get their sandboxes: a user's warm one, the pool, or a fresh kernel.

The pool only holds kernels with the administrator's default limits working in the server
root (a sandbox can write only where it was launched); anything else is a cold start.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from .errors import ApiError


class SandboxSupply:
    """Hands out started sandboxes; the caller owns (and shuts down) what it receives."""

    def __init__(
        self,
        *,
        root_dir: Path,
        limits: SandboxLimits,
        pool_size: int,
        log: logging.Logger,
        allow_unconfined: bool = False,
        kernel_manager_class: type | None = None,
        backend: Any = None,
        preload: list[str] | None = None,
        pool_max: int = 0,
    ) -> None:
        self.root_dir = root_dir
        self.allow_unconfined = allow_unconfined
        """Passed to every sandbox: start without pid/filesystem isolation (admin's choice)."""
        self.options: dict[str, Any] = {"allow_unconfined": allow_unconfined}
        """Every sandbox's options (the kernel manager class, when the admin chose one)."""
        if kernel_manager_class is not None:
            self.options["kernel_manager_class"] = kernel_manager_class
        if backend is None:
            from ..sandbox.backend import LocalBackend

            backend = LocalBackend(**self.options)
        self.backend = backend
        """Makes every sandbox (``sandbox.backend``): local kernels or a kernel gateway."""
        self.limits = limits
        self.pool_size = pool_size
        self.preload = list(preload or [])
        self.pool_max = pool_max
        """Most pooled sandboxes when demand is high (``demand.ceiling``); 0: ``pool_size``."""
        self.log = log
        self.pool: Any = None
        self.enforcement: dict[str, Any] | None = None
        """What the last started sandbox reported enforcing on this machine."""
        self._lock = asyncio.Lock()
        self._error: str | None = None
        self._warm: dict[str, tuple[Any, Path, float]] = {}
        self._closed = False

    async def ensure_pool(self) -> Any:
        """Start the pool once; later calls return it (None when it cannot start)."""
        async with self._lock:
            if self.pool is None and not self._closed:
                pool = None
                try:
                    from ..sandbox import SandboxPool

                    pool = SandboxPool(
                        size=self.pool_size,
                        workdir=self.root_dir,
                        limits=self.limits,
                        backend=self.backend,
                        preload=self.preload,
                        max_size=self.pool_max or None,
                    )
                    await pool.start()
                except Exception as e:
                    self._error = str(e)
                    self.log.error("codeagent: sandbox pool failed to start: %s", e)
                    if pool is not None:
                        with contextlib.suppress(Exception):
                            await pool.shutdown()
                    return None
                self.pool, self._error = pool, None
            return self.pool

    async def get(self, owner: str, workdir: Path, limits: SandboxLimits) -> Any:
        """A started sandbox for a new session of ``owner``; 503 when none can start."""
        try:
            sandbox = await self._get(owner, workdir, limits)
        except Exception as e:
            self.log.exception("codeagent: cannot start a sandbox")
            raise ApiError(503, f"cannot start a sandbox kernel: {e}") from e
        self.enforcement = dict(sandbox.enforcement)
        return sandbox

    async def get_fresh(self, owner: str, workdir: Path, limits: SandboxLimits) -> Any:
        """A newly started sandbox in ``workdir`` (a helper agent's private folder): never
        the owner's warm one (which stays held for their next session) nor a pooled one
        (those work in the server root)."""
        if self._closed:
            raise ApiError(503, "the server is shutting down")
        try:
            sandbox = self.backend.create(workdir, limits, owner)
            await sandbox.start()
        except Exception as e:
            self.log.exception("codeagent: cannot start a sandbox")
            raise ApiError(503, f"cannot start a sandbox kernel: {e}") from e
        return sandbox

    async def _get(self, owner: str, workdir: Path, limits: SandboxLimits) -> Any:
        if self._closed:
            raise RuntimeError("the server is shutting down")
        if limits == self.limits:
            held = self._warm.pop(owner, None)
            if held is not None:
                if held[1] == workdir:
                    return held[0]
                await shutdown_quietly(held[0])
            pool = await self.ensure_pool()
            if pool is not None:
                return await pool.acquire(workdir=workdir)
        sandbox = self.backend.create(workdir, limits, owner)
        await sandbox.start()
        return sandbox

    async def warm(self, owner: str, workdir: Path, ttl: float) -> None:
        """Hold a started sandbox for ``owner``'s next session for ``ttl`` seconds."""
        held = self._warm.get(owner)
        if held is not None and held[1] == workdir:
            self._warm[owner] = (held[0], workdir, time.monotonic() + ttl)
            return
        sandbox = await self.get(owner, workdir, self.limits)
        old = self._warm.pop(owner, None)
        self._warm[owner] = (sandbox, workdir, time.monotonic() + ttl)
        if old is not None:
            await shutdown_quietly(old[0])

    async def expire_warm(self) -> None:
        """Drop warm sandboxes past their time, and pooled ones beyond the demand."""
        if self.pool is not None:
            await self.pool.trim()
        now = time.monotonic()
        for owner, held in list(self._warm.items()):
            if now > held[2] and self._warm.get(owner) is held:
                del self._warm[owner]
                await shutdown_quietly(held[0])

    def status(self) -> dict[str, Any]:
        if self.pool is not None:
            status = dict(self.pool.status())
            if self.pool.demand.high > self.pool_size:
                status["target"] = self.pool.demand.target()
        else:
            status = {"size": self.pool_size, "started": False, "error": self._error}
        status["warm_held"] = len(self._warm)
        status["backend"] = self.backend.describe()
        return status

    async def shutdown(self) -> None:
        """Shut the warm sandboxes and the pool down; nothing is handed out afterwards."""
        self._closed = True
        warm = [held[0] for held in self._warm.values()]
        self._warm.clear()
        await asyncio.gather(*(shutdown_quietly(s) for s in warm))
        async with self._lock:
            pool, self.pool = self.pool, None
        if pool is not None:
            with contextlib.suppress(Exception):
                await pool.shutdown()
        close = getattr(self.backend, "close", None)  # a zygote, and whatever it forked
        if close is not None:
            await asyncio.to_thread(close)


async def shutdown_quietly(sandbox: Any) -> None:
    with contextlib.suppress(Exception):
        await sandbox.shutdown()
