"""Stopping a run: the first stop request wins, and whatever the run awaits is raced
against it (a model request is dropped, a cell is interrupted and keeps its output)."""

from __future__ import annotations

import asyncio

import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.core.stopping import RunStopped, StopSignal


async def test_the_first_request_wins_and_check_raises_it() -> None:
    stop = StopSignal(None)
    stop.reset()
    stop.check()  # nothing requested: no stop
    stop.request(ev.CANCELLED, "stopped by the user")
    stop.request(ev.MAX_WALL_TIME, "wall-time budget used up")
    with pytest.raises(RunStopped) as raised:
        stop.check()
    assert (raised.value.status, raised.value.reason) == (ev.CANCELLED, "stopped by the user")
    stop.reset()  # the next run starts clean
    stop.check()


async def test_guard_returns_what_the_awaited_work_returns() -> None:
    stop = StopSignal(None)
    stop.reset()
    assert await stop.guard(asyncio.sleep(0, result=42), False) == 42


async def test_a_stop_drops_a_model_request_and_cancels_it() -> None:
    stop = StopSignal(None)
    stop.reset()
    request = asyncio.ensure_future(asyncio.sleep(3600))
    asyncio.get_running_loop().call_soon(stop.request, ev.CANCELLED, "stopped")
    with pytest.raises(RunStopped, match="stopped"):
        await stop.guard(request, False)
    assert request.cancelled()


async def test_a_stop_interrupts_a_cell_which_comes_back_with_its_output() -> None:
    """Interruptible work is not cancelled: the interrupt makes it return (as a kernel's
    interrupted cell returns its partial output), and that result is the guard's."""
    interrupted = asyncio.Event()

    async def interrupt() -> None:
        interrupted.set()

    async def cell() -> str:
        await interrupted.wait()
        return "partial output"

    stop = StopSignal(interrupt)
    stop.reset()
    asyncio.get_running_loop().call_soon(stop.request, ev.CANCELLED, "stopped")
    assert await stop.guard(cell(), True) == "partial output"
    with pytest.raises(RunStopped):
        stop.check()  # the run still stops after the cell


async def test_a_stop_requested_before_the_run_is_seen_by_the_guard_at_once() -> None:
    stop = StopSignal(None)
    stop.reset()
    stop.request(ev.MAX_WALL_TIME, "wall-time budget of 1 s used up")
    with pytest.raises(RunStopped, match="wall-time"):
        await stop.guard(asyncio.sleep(3600), False)
