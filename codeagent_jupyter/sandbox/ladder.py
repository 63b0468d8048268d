"""The timeout ladder of one cell, the same for the local and the gateway sandbox.

A cell that runs past its timeout, or takes the workspace over its disk budget (a
``DiskWatch`` sees it while it runs), is interrupted: the kernel and its state survive. If
it has not stopped ``grace`` seconds later, the kernel is given up (restarted locally,
replaced on a gateway) and its state is lost. Both backends climb the same rungs and say
the same words; each reads its own messages and restarts its own way, so the ladder only
says when the next rung is due, takes the interrupt, and names the outcome.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..core.ports import ExecResult
from .disk import DiskWatch
from .outputs import OutputCollector


class Ladder:
    """Where one running cell stands: not yet interrupted, interrupted, or past the grace."""

    def __init__(
        self, start: float, timeout: float, grace: float, watch: DiskWatch | None = None
    ) -> None:
        self.start = start
        self.timeout = timeout
        self.grace = grace
        self.watch = watch
        self.interrupted_at: float | None = None
        self.by_disk = False
        """The interrupt came from the disk budget, not the timeout."""

    def due(self) -> float:
        """When the next rung is due (``time.monotonic``): the timeout, then the grace's end.
        The disk budget can bring the interrupt forward; a watcher says so by waking the
        caller (``DiskWatch.on_over``) or is seen at the next poll."""
        if self.interrupted_at is None:
            return self.start + self.timeout
        return self.interrupted_at + self.grace

    async def climb(self, now: float, interrupt: Callable[[], Awaitable[None]]) -> bool:
        """Take the rung due at ``now``: interrupt the cell at the timeout, or as soon as
        the disk watch found the workspace over its budget. True once the grace after the
        interrupt is over too: the caller gives the kernel up (``gave_up`` says it)."""
        if self.interrupted_at is not None:
            return now - self.interrupted_at >= self.grace
        crossed = self.watch is not None and self.watch.over is not None
        if now - self.start >= self.timeout or crossed:
            self.by_disk = now - self.start < self.timeout
            self.interrupted_at = now
            await interrupt()
        return False

    def gave_up(self, what_happened: str) -> tuple[str, str]:
        """Status and note of a cell that did not stop within the grace (``what_happened``:
        "the kernel was restarted", "the kernel is replaced")."""
        why = "" if self.by_disk else f" after {self.timeout:g} s (cell_timeout)"
        note = (
            f"interrupted{why}; it did not stop within {self.grace:g} s, "
            f"so {what_happened}; state lost"
        )
        return ("error" if self.by_disk else "timeout"), note

    @property
    def interrupted_after(self) -> float | None:
        """The timeout after which the cell was interrupted (``reply_status``); None when it
        was not, or when the disk budget interrupted it (the disk check says that)."""
        return self.timeout if self.interrupted_at is not None and not self.by_disk else None


def cell_result(
    status: str,
    collector: OutputCollector,
    start: float,
    count: Any,
    notes: list[str],
    end: float | None = None,
) -> ExecResult:
    """The ``ExecResult`` of a cell, whichever way it ended: its outputs so far, its notes."""
    return ExecResult(
        status=status,
        outputs=collector.finish(),
        duration_s=(end or time.monotonic()) - start,
        execution_count=count,
        note="; ".join(notes),
    )
