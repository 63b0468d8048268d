"""Is the kernel under a running cell still there? Asked every fraction of a second.

The gateway's own restarter polls the kernel process every ``KernelRestarter.time_to_dead``
seconds (3 by default) before it announces a death on the socket, which is too slow for a
``died`` within 2 s. So while a cell runs, the sandbox asks the kernel itself: a
``kernel_info_request`` on the control channel, which ipykernel answers from its control
thread even while the shell is busy.

Silence alone does not prove death: a cell in C code that holds the GIL (``sum(range(10**9))``,
a regex, some pandas operations) silences the control thread too. Silence is confirmed by
something the GIL cannot block: opening a second channels socket to the same kernel. The
server behind every gateway (``jupyter_server``'s ``ZMQChannelsWebsocketConnection.prepare``)
only completes that handshake once ``kernel_manager.is_alive()`` (the process poll) is true
and the kernel's first ``kernel_info`` is answered (cached from our own socket), so it opens
in milliseconds for a live kernel however busy, and hangs for a dead one until the restarter
has replaced it. A 404 says the kernel was deleted (culled). Closing the probe costs the
gateway nothing lasting: it buffers a kernel's output for replay only when its last
connection closes, and the cell's own socket is still open.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from .gateway_wire import GatewayError, GatewayWire

PROBE_S = 0.2
"""How often the control channel is asked while a cell runs."""
GRACE_S = 0.4
"""Silence on the control channel after which the process is checked through the gateway."""
CONFIRM_S = 1.0
"""How long a second socket may take to open before the kernel is called dead."""
MAX_OUTSTANDING = 3
"""Probes left unanswered at once (a cell holding the GIL answers them all at its end)."""


async def watch(
    wire: GatewayWire, cell: asyncio.Queue[dict[str, Any]], stop: asyncio.Event
) -> None:
    """Put ``{"dead": reason}`` into the cell's queue once the kernel is known to be gone.

    Started ``PROBE_S`` into a cell (shorter cells need no watcher). Runs until ``stop`` is
    set (the cell is over; checked every ``PROBE_S``, because on Python 3.10/3.11
    ``asyncio.wait_for`` can swallow a cancellation that races a reply). A closed socket is
    not this watcher's concern: the cell sees ``CLOSED`` itself and reconnects; probes
    resume on the new socket.
    """
    replies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    outstanding: set[str] = set()
    answered = time.monotonic()
    try:
        while not stop.is_set():
            if len(outstanding) < MAX_OUTSTANDING:
                try:
                    outstanding.add(wire.post("control", "kernel_info_request", {}, replies))
                except GatewayError:
                    answered = time.monotonic()  # no socket: nothing to conclude yet
            if await _answer(replies, outstanding, wire, PROBE_S):
                answered = time.monotonic()
            if stop.is_set() or time.monotonic() - answered < GRACE_S:
                continue
            alive = await wire.kernel_alive(CONFIRM_S)
            if alive is False and not await _answer(replies, outstanding, wire, 0):
                cell.put_nowait({"dead": _REASON})
                return
            answered = time.monotonic()  # alive, or the gateway cannot tell: keep asking
    finally:
        for msg_id in outstanding:
            wire.forget_id(msg_id)


_REASON = (
    f"kernel died (no answer for {GRACE_S:g} s and the gateway could not reach its process "
    f"within {CONFIRM_S:g} s)"
)


async def _answer(
    replies: asyncio.Queue[dict[str, Any]], outstanding: set[str], wire: GatewayWire, wait: float
) -> bool:
    """Whether a probe was answered during ``wait`` seconds (0: one already queued); the
    whole ``wait`` is spent, so probes go out once per ``PROBE_S`` however fast replies come."""
    answered = False
    deadline = time.monotonic() + wait
    while True:
        left = deadline - time.monotonic()
        try:
            msg = replies.get_nowait() if left <= 0 else await asyncio.wait_for(replies.get(), left)
        except (asyncio.QueueEmpty, asyncio.TimeoutError):
            return answered
        parent = (msg.get("parent_header") or {}).get("msg_id")
        if parent in outstanding:
            outstanding.discard(parent)
            wire.forget_id(parent)
            answered = True
        elif msg.get("closed"):
            for msg_id in outstanding:  # sent on a socket that is gone: never answered
                wire.forget_id(msg_id)
            outstanding.clear()
