"""The server's workspace snapshots: taken in the worker pool, in order, never on the loop.

A snapshot walks the workspace the sandbox wrote and hashes and stores its files; how long
that takes is the sandbox's choice (many files, big files). ``SnapshotRecorder`` (the CLI's
sink) does it inside the event's delivery; here each capture is chained after the one
before it and run by ``offloop``; its entry is appended to the notebook's list on the loop
when it is done, and the notebook saved again (a crash loses no step's snapshot). Two
waits keep the snapshots exact: the next tool call does not start before the captures
asked so far are in (``SettledFirst``, a tool hook), and a run's change set is computed
only once they are (``ServerChangesCell`` awaits ``settled``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from ..record.snapshot_sink import SnapshotRecorder
from ..record.snapshots import StoreFullError
from .offloop import off_loop

log = logging.getLogger(__name__)


class OffLoopSnapshots(SnapshotRecorder):
    """``SnapshotRecorder`` whose captures run in the worker pool, one after another."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._last: asyncio.Future[None] | None = None
        self.recorder: Any = None
        """Saves the notebook once an entry is listed: the step's save came before it."""

    def capture(self, step: int, tool_call_id: str) -> dict[str, Any] | None:
        """Ask for a snapshot for (current run, ``step``); it is listed once taken."""
        self._last = asyncio.ensure_future(self._take(self._last, self.run, step, tool_call_id))
        return None

    async def _take(
        self, before: asyncio.Future[None] | None, run: int, step: int, tool_call_id: str
    ) -> None:
        if before is not None:
            with contextlib.suppress(BaseException):
                await before
        entries = self.meta.setdefault("snapshots", [])
        previous = entries[-1]["snapshot"] if entries and entries[-1].get("snapshot") else None
        entry: dict[str, Any] = {"run": run, "step": step, "tool_call_id": tool_call_id}
        try:
            taken = await off_loop(self.store.capture, self.workdir, previous, session=self.session)
            entry |= taken.to_dict()
        except StoreFullError as exc:
            log.warning("workspace snapshot not taken: %s", exc)
            entry["error"] = str(exc)
        except Exception as exc:  # a snapshot is worth having, never worth a failed run
            log.exception("workspace snapshot failed")
            entry["error"] = f"{type(exc).__name__}: {exc}"
        self.meta.setdefault("snapshots", []).append(entry)
        if self.recorder is not None:
            try:
                self.recorder.save()
            except Exception:  # the next save carries it
                log.exception("the session notebook could not be saved")

    async def settled(self) -> None:
        """Wait until every capture asked for so far is listed."""
        while self._last is not None and not self._last.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(self._last)


class SettledFirst:
    """Tool hooks that let no tool call start before the workspace snapshots asked for so
    far are taken (so a snapshot shows its step, not the next one's), around the
    administrator's hooks (``inner``, when there are any)."""

    def __init__(self, snapshots: OffLoopSnapshots, inner: Any, session_id: str) -> None:
        self.snapshots = snapshots
        self.inner = inner
        self.session_id = inner.session_id if inner is not None else session_id

    def __getattr__(self, name: str) -> Any:  # emit, end_soon…: the inner chain's own
        if self.inner is None:
            raise AttributeError(name)
        return getattr(self.inner, name)

    async def before(self, call: Any) -> Any:
        await self.snapshots.settled()
        if self.inner is not None:
            return await self.inner.before(call)
        from ..hooks.base import Verdict

        return Verdict(dict(call.arguments))

    async def after(self, call: Any, outcome: Any) -> Any:
        if self.inner is not None:
            return await self.inner.after(call, outcome)
        return outcome
