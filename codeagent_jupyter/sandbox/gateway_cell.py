"""How a gateway sandbox waits for one cell: reply and idle, the timeout ladder, death, loss.

A cell is complete when both its ``execute_reply`` and its ``status: idle`` have arrived
(output can follow the reply). A kernel died when ``gateway_watch`` finds it gone (within
about 1.5 s) or the gateway announces its restart, whichever comes first; the ``died``
result is returned at once and a fresh kernel starts in the background (the next cell waits
for it). A closed socket is reconnected once; if that fails the gateway is unreachable.
Each way out is an ``ExecResult``, never an exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

from ..core.ports import ExecResult
from .disk import DiskWatch
from .gateway_watch import PROBE_S, watch
from .gateway_wire import CLOSED, GatewayError
from .ladder import Ladder, cell_result
from .messages import reply_status
from .outputs import OutputCollector

UNREACHABLE = "gateway unreachable"
TICK = {"tick": True}
"""Put in a cell's queue when the next rung of its timeout ladder is due."""


@contextlib.asynccontextmanager
async def watching(box: Any, queue: asyncio.Queue[dict[str, Any]]) -> AsyncIterator[None]:
    """Probe the kernel's liveness (``gateway_watch``) while the block runs a cell."""
    stop = asyncio.Event()
    watchers: list[asyncio.Future[None]] = []
    # Most cells end before the first probe would be due: they start no watcher at all.
    later = asyncio.get_running_loop().call_later(
        PROBE_S, lambda: watchers.append(asyncio.ensure_future(watch(box.wire, queue, stop)))
    )
    try:
        yield
    finally:
        later.cancel()
        stop.set()
        for watcher in watchers:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher


async def collect(
    box: Any,
    queue: asyncio.Queue[dict[str, Any]],
    collector: OutputCollector,
    start: float,
    timeout: float | None,
    notes: list[str],
    watch: DiskWatch | None = None,
) -> tuple[ExecResult, dict[str, Any]]:
    """Wait for the cell, climbing the timeout ladder (``ladder``: interrupt, then replace
    the kernel) at the timeout or when ``watch`` finds the workspace over its budget."""
    timeout = box.limits.cell_timeout if timeout is None else timeout
    ladder = Ladder(start, timeout, box.interrupt_grace, watch)
    reply: dict[str, Any] | None = None
    idle, count, reconnected = False, None, False
    loop = asyncio.get_running_loop()

    def arm() -> asyncio.TimerHandle:  # a message costs one queue get: no polling
        return loop.call_at(max(ladder.due(), loop.time()) + 0.01, queue.put_nowait, TICK)

    timer, armed_for, rearm = arm(), ladder.due(), False
    if watch is not None:
        watch.on_over = lambda: queue.put_nowait(TICK)
    try:
        while reply is None or not idle:
            if await ladder.climb(time.monotonic(), box.interrupt):
                status, note = ladder.gave_up("the kernel is replaced")
                notes.append(note)
                return _replace(box, status, collector, start, count, notes), {}
            if rearm or ladder.due() != armed_for:  # a tick came early, or a rung was taken
                timer.cancel()
                timer, armed_for, rearm = arm(), ladder.due(), False
            msg = await queue.get()
            if msg is TICK:
                rearm = True
                continue
            if msg is CLOSED and not reconnected:
                reconnected = True  # one reconnect: a dropped socket is not a dead kernel
                with contextlib.suppress(GatewayError):
                    await box.wire.connect()
                    continue
            if msg is CLOSED:
                notes.append(f"{UNREACHABLE} at {box.wire.url}")
                return cell_result("died", collector, start, count, notes), {}
            if msg.get("dead") or msg.get("gone"):
                notes.append(msg.get("dead") or "kernel died (the gateway announced its restart)")
                notes.append("a fresh kernel replaces it; state lost")
                return _replace(box, "died", collector, start, count, notes), {}
            kind = msg["header"]["msg_type"]
            if msg.get("channel") == "shell" and kind == "execute_reply":
                reply = msg
            elif kind == "status":
                idle = idle or msg["content"].get("execution_state") == "idle"
            elif kind == "execute_input":
                count = msg["content"].get("execution_count")
            else:
                collector.add(msg)
        content = reply["content"]
        count = content.get("execution_count", count)
        status, note = reply_status(content, ladder.interrupted_after, box.limits)
        notes.extend([note] if note else [])
        exprs = content.get("user_expressions") or {}
        return cell_result(status, collector, start, count, notes), exprs
    finally:
        timer.cancel()


def _replace(
    box: Any, status: str, collector: OutputCollector, start: float, count: Any, notes: list[str]
) -> ExecResult:
    """The result now; the kernel is replaced in the background (``replace_soon``)."""
    box.replace_soon()
    return cell_result(status, collector, start, count, notes)
