"""How a gateway sandbox waits for one cell: reply and idle, timeout ladder, death, loss.

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
from .gateway_watch import PROBE_S, watch
from .gateway_wire import CLOSED, GatewayError
from .outputs import OutputCollector, render_text

UNREACHABLE = "gateway unreachable"
TICK = {"tick": True}
"""Put in a cell's queue when the next step of its timeout ladder is due."""


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
    watch: Any = None,
) -> tuple[ExecResult, dict[str, Any]]:
    """Wait for the cell; its ladder (interrupt, then replace the kernel) starts at the
    timeout or when ``watch`` (a ``DiskWatch``) finds the workspace over its budget."""
    timeout = box.limits.cell_timeout if timeout is None else timeout
    reply: dict[str, Any] | None = None
    idle, count, interrupted_at = False, None, None
    reconnected, by_disk = False, False
    loop = asyncio.get_running_loop()
    # The timeout ladder is woken by a timer, not by polling: a message costs one queue get.
    timer = loop.call_at(start + timeout + 0.01, queue.put_nowait, TICK)
    if watch is not None:
        watch.on_over = lambda: queue.put_nowait(TICK)
    try:
        while reply is None or not idle:
            now = time.monotonic()
            crossed = watch is not None and watch.over is not None
            if interrupted_at is None and (now - start >= timeout or crossed):
                by_disk = now - start < timeout
                await box.interrupt()
                interrupted_at = now
                if by_disk:  # the next step of the ladder: after the grace, not the timeout
                    timer.cancel()
                    timer = loop.call_at(now + box.interrupt_grace + 0.01, queue.put_nowait, TICK)
            elif interrupted_at is not None and now - interrupted_at >= box.interrupt_grace:
                why = "" if by_disk else f" after {timeout:g} s (cell_timeout)"
                notes.append(
                    f"interrupted{why}; it did not stop within "
                    f"{box.interrupt_grace:g} s, so the kernel is replaced; state lost"
                )
                status = "error" if by_disk else "timeout"
                return _replace(box, status, collector, start, count, notes), {}
            msg = await queue.get()
            if msg is TICK:  # re-armed for the next step of the ladder
                due = start + timeout if interrupted_at is None else interrupted_at
                due += 0 if interrupted_at is None else box.interrupt_grace
                timer.cancel()  # a tick from the disk watch comes before the timer's
                timer = loop.call_at(max(due, loop.time()) + 0.01, queue.put_nowait, TICK)
                continue
            if msg is CLOSED and not reconnected:
                reconnected = True  # one reconnect: a dropped socket is not a dead kernel
                with contextlib.suppress(GatewayError):
                    await box.wire.connect()
                    continue
                notes.append(f"{UNREACHABLE} at {box.wire.url}")
                return result(box.text_limit, "died", collector, start, count, notes), {}
            if msg is CLOSED:
                notes.append(f"{UNREACHABLE} at {box.wire.url}")
                return result(box.text_limit, "died", collector, start, count, notes), {}
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
        reply_content = reply["content"]
        count = reply_content.get("execution_count", count)
        if interrupted_at is not None and not by_disk:
            notes.append(f"interrupted after {timeout:g} s (cell_timeout); state kept")
            status = "timeout"
        else:
            status = "ok" if reply_content.get("status") == "ok" else "error"
        exprs = reply_content.get("user_expressions") or {}
        return result(box.text_limit, status, collector, start, count, notes), exprs
    finally:
        timer.cancel()


def _replace(
    box: Any, status: str, collector: OutputCollector, start: float, count: Any, notes: list[str]
) -> ExecResult:
    """The result now; the kernel is replaced in the background (``replace_soon``)."""
    box.replace_soon()
    return result(box.text_limit, status, collector, start, count, notes)


def result(
    text_limit: int,
    status: str,
    collector: OutputCollector,
    start: float,
    count: Any,
    notes: list[str],
    end: float | None = None,
) -> ExecResult:
    outputs = collector.finish()
    return ExecResult(
        status=status,
        outputs=outputs,
        text=render_text(outputs, text_limit),
        duration_s=(end or time.monotonic()) - start,
        execution_count=count,
        note="; ".join(notes),
    )
