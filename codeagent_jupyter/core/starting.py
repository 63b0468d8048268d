"""A sandbox that is still starting: so the model can think while the kernel boots.

``StartingSandbox`` starts an unstarted sandbox in the background and stands in for it at
once. The loop sends its first model request while the kernel starts and publishes
``RunStarted`` (which records what the sandbox really enforces) only when it is ready; a
cell waits for the start, so the first cell runs at max(model's first reply, sandbox
ready). ``on_ready`` runs the moment the kernel is up, before any cell: the CLI says there
what the sandbox enforces, so that line still comes first.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from .bus import EventBus
from .ports import ExecResult, ModelReply, OutputCallback


class StartingSandbox:
    """Stands in for ``sandbox`` (unstarted: ``start``/``shutdown``) while it starts.

    Create it inside a running event loop: the start begins at once. ``ready()`` waits for
    the start and returns the sandbox, or raises what the start raised (every caller gets
    the same error). ``aclose`` shuts the sandbox down, after waiting for a start under way
    (a kernel half started would otherwise be left behind).
    """

    def __init__(
        self,
        sandbox: Any = None,
        *,
        make: Callable[[], Any] | None = None,
        on_ready: Callable[[Any], None] | None = None,
        before: Awaitable[Any] | None = None,
        workdir: Path | None = None,
        limits: SandboxLimits | None = None,
    ) -> None:
        """``before``: what must be done before the kernel starts (the CLI's signing key,
        which must exist when the sandbox decides what to hide, and the import of the
        sandbox's modules, both in a thread); its error is the start's. ``make`` instead of
        ``sandbox``: a function that makes the unstarted sandbox once ``before`` is done
        (``workdir`` and ``limits`` say what it will have), so that the caller's event loop
        is not held up making it."""
        if (sandbox is None) == (make is None):
            raise TypeError("give either a sandbox or make (with workdir and limits)")
        if make is not None and (workdir is None or limits is None):
            raise TypeError("make needs the sandbox's workdir and limits")
        self.make = make
        self.sandbox = sandbox
        self.workdir: Path = Path(workdir if sandbox is None else sandbox.workdir)
        self.limits: SandboxLimits = limits if sandbox is None else sandbox.limits
        self.on_ready = on_ready
        self._before = before
        self._task: asyncio.Future[Any] = asyncio.ensure_future(self._start())

    async def _start(self) -> Any:
        if self._before is not None:
            await self._before
        if self.make is not None:
            self.sandbox = self.make()
        await self.sandbox.start()
        if self.on_ready is not None:
            self.on_ready(self.sandbox)
        return self.sandbox

    @property
    def started(self) -> bool:
        """The kernel is up (``ready()`` returns at once)."""
        return self._task.done() and not self._task.cancelled() and not self._task.exception()

    async def launched(self) -> None:
        """Return once the kernel's process is launched, or its start has ended either way
        (a sandbox that says nothing of its launch: once it is ready). What loads after
        this no longer competes with the launch for the interpreter."""
        while self.sandbox is None and not self._task.done():
            await asyncio.sleep(0.005)  # ``before`` still running, or not yet made
        event = getattr(self.sandbox, "launched", None)
        waiters: set[asyncio.Future[Any]] = {self._task}
        if isinstance(event, asyncio.Event):
            waiters.add(asyncio.ensure_future(event.wait()))
        _, pending = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        for waiter in pending - {self._task}:
            waiter.cancel()

    async def ready(self) -> Any:
        """The started sandbox; raises the start's error if it failed."""
        return await asyncio.shield(self._task)

    @property
    def enforcement(self) -> dict[str, Any]:
        """What the sandbox enforces: known once it is ready (empty before)."""
        return dict(getattr(self.sandbox, "enforcement", {}) or {})

    @property
    def preloaded(self) -> Any:
        return getattr(self.sandbox, "preloaded", None)

    async def execute(
        self, code: str, *, on_output: OutputCallback | None = None, store_history: bool = True
    ) -> ExecResult:
        sandbox = await self.ready()
        return await sandbox.execute(code, on_output=on_output, store_history=store_history)

    async def interrupt(self) -> None:
        """Interrupts a running cell; before the kernel is up there is none."""
        if self.started:
            await self.sandbox.interrupt()

    async def aclose(self) -> None:
        with contextlib.suppress(BaseException):
            await asyncio.shield(self._task)
        if self.sandbox is not None:  # None: it was never made (``before`` failed)
            await self.sandbox.shutdown()

    async def __aenter__(self) -> StartingSandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class HeadStart:
    """The first model request of a run, sent before the run has begun (its sandbox still
    starting). ``request(publish)`` makes the request, announcing its text deltas and retry
    notes through ``publish``: those are held and published in order once ``reply()`` is
    asked for (``RunStarted`` is out), then go straight to ``bus``."""

    def __init__(self, bus: EventBus, request: Callable[[Any], Awaitable[ModelReply]]) -> None:
        self.bus = bus
        self.held: list[tuple[Any, dict[str, Any]]] | None = []
        self.task: asyncio.Future[ModelReply] = asyncio.ensure_future(request(self._publish))

    def _publish(self, cls: Any, **fields: Any) -> None:
        if self.held is None:
            self.bus.publish(cls, **fields)
        else:
            self.held.append((cls, fields))

    def reply(self) -> asyncio.Future[ModelReply]:
        """Publish what was held (the run has begun); the reply, as it comes."""
        held, self.held = self.held or [], None
        for cls, fields in held:
            self.bus.publish(cls, **fields)
        return self.task

    def done(self) -> bool:
        return self.task.done()

    def cancel(self) -> None:
        """Drop the request (the run stopped, or its sandbox could not start)."""
        self.task.cancel()
        self.task.add_done_callback(_retrieve)


def _retrieve(task: asyncio.Future[Any]) -> None:
    """Read a dropped request's outcome so that asyncio does not report it as lost."""
    if not task.cancelled():
        task.exception()
