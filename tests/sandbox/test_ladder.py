"""The timeout ladder both sandboxes climb, without a kernel: rungs, their times, the words.

The local and the gateway sandbox run it against real kernels in test_limits.py,
test_restart.py and tests/e2e/gateway; here each rung is checked at chosen instants.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from codeagent_jupyter.config import SandboxLimits
from codeagent_jupyter.sandbox.disk import DiskWatch
from codeagent_jupyter.sandbox.ladder import Ladder, cell_result
from codeagent_jupyter.sandbox.messages import reply_status
from codeagent_jupyter.sandbox.outputs import OutputCollector

pytestmark = pytest.mark.asyncio


class Interrupts:
    def __init__(self) -> None:
        self.count = 0

    async def __call__(self) -> None:
        self.count += 1


async def test_timeout_then_grace_then_give_up() -> None:
    ladder, interrupt = Ladder(start=100.0, timeout=5, grace=2), Interrupts()
    assert ladder.due() == 105.0
    assert not await ladder.climb(104.9, interrupt) and interrupt.count == 0
    assert not await ladder.climb(105.0, interrupt) and interrupt.count == 1
    assert ladder.due() == 107.0 and ladder.interrupted_after == 5
    assert not await ladder.climb(106.9, interrupt) and interrupt.count == 1  # once only
    assert await ladder.climb(107.0, interrupt)
    status, note = ladder.gave_up("the kernel was restarted")
    assert status == "timeout"
    assert note == (
        "interrupted after 5 s (cell_timeout); it did not stop within 2 s, "
        "so the kernel was restarted; state lost"
    )


async def test_a_cell_that_stops_after_the_interrupt_keeps_its_state() -> None:
    ladder = Ladder(start=0.0, timeout=1.5, grace=3)
    await ladder.climb(2.0, Interrupts())
    status, note = reply_status({"status": "error"}, ladder.interrupted_after, _limits())
    assert (status, note) == ("timeout", "interrupted after 1.5 s (cell_timeout); state kept")
    untouched = Ladder(start=0.0, timeout=1.5, grace=3)
    assert reply_status({"status": "ok"}, untouched.interrupted_after, _limits()) == ("ok", "")


async def test_the_disk_budget_interrupts_before_the_timeout(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * (2 * 1024 * 1024))
    watch = DiskWatch(tmp_path, budget_mb=1, interval_s=0.01)
    watch.start()
    try:
        for _ in range(500):  # a real measure of the workspace, in a worker thread
            if watch.over is not None:
                break
            await asyncio.sleep(0.01)
    finally:
        await watch.stop()
    assert watch.over is not None
    ladder, interrupt = Ladder(start=0.0, timeout=60, grace=1, watch=watch), Interrupts()
    assert not await ladder.climb(0.5, interrupt) and interrupt.count == 1
    assert ladder.by_disk and ladder.due() == 1.5
    assert ladder.interrupted_after is None  # the disk check says why, not the timeout
    assert await ladder.climb(1.5, interrupt)
    status, note = ladder.gave_up("the kernel is replaced")
    assert status == "error"
    assert note == "interrupted; it did not stop within 1 s, so the kernel is replaced; state lost"


async def test_cell_result_keeps_the_outputs_and_joins_the_notes() -> None:
    collector = OutputCollector(1000)
    msg = {"header": {"msg_type": "stream"}, "content": {"name": "stdout", "text": "hi\n"}}
    collector.add(msg)
    result = cell_result("died", collector, 0.0, 3, ["kernel died", "restarted"], end=2.5)
    assert (result.status, result.execution_count, result.duration_s) == ("died", 3, 2.5)
    assert result.note == "kernel died; restarted"
    assert result.text == "hi"


def _limits() -> SandboxLimits:
    return SandboxLimits()
