"""How a run stops early: a requested stop, raced against whatever the run is awaiting.

A stop comes from the user (cancel), the wall-time deadline or the disk budget. Whatever the
run awaits at that moment is raced against it: a model request is simply dropped; a cell is
interrupted instead, so that it comes back with its partial output (which is recorded).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from ..events import CANCELLED

T = TypeVar("T")

CANCEL_GRACE_S = 5.0
"""How long a stopped cell may take to come back with its partial output after an interrupt."""


class RunStopped(Exception):
    """Ends a run cleanly; carries the final status and a sentence for people."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


class StopSignal:
    """The stop request of one run; ``reset`` before each run."""

    def __init__(self, interrupt: Callable[[], Awaitable[None]] | None) -> None:
        self.interrupt = interrupt
        """Interrupts the running cell (the sandbox's ``interrupt``), if there is a sandbox."""
        self.reason: tuple[str, str] | None = None
        self._event: asyncio.Event | None = None

    def reset(self) -> None:
        self.reason = None
        self._event = asyncio.Event()

    def request(self, status: str, reason: str) -> None:
        """Ask the run to stop with ``status``; the first request wins."""
        if self.reason is None:
            self.reason = (status, reason)
        if self._event is not None:
            self._event.set()

    def check(self) -> None:
        """Raise ``RunStopped`` if a stop was requested."""
        if self.reason is not None:
            raise RunStopped(*self.reason)

    async def guard(self, coro: Awaitable[T], interruptible: bool) -> T:
        """Await ``coro`` unless a stop is requested first (then raise ``RunStopped``)."""
        assert self._event is not None, "reset() before a run"
        task = asyncio.ensure_future(coro)
        stopper = asyncio.ensure_future(self._event.wait())
        try:
            await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                return task.result()
            if interruptible and self.interrupt is not None:
                await self.interrupt()
                done, _ = await asyncio.wait({task}, timeout=CANCEL_GRACE_S)
                if done:
                    return task.result()
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise RunStopped(*(self.reason or (CANCELLED, "stopped")))
        finally:
            stopper.cancel()
