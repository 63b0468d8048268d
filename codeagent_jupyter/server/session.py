"""One agent session held by the server: its loop, sandbox, recording and event stream.

A session outlives any one client: events are kept in memory in order, so a WebSocket that
connects late (or reconnects with ``since``) is replayed everything it missed, then follows
live. The session notebook on disk is the durable copy; after a restart a session is rebuilt
from it, read-only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .. import events as ev
from .errors import ApiError

log = logging.getLogger(__name__)

STARTING, RUNNING, IDLE, CLOSED = "starting", "running", "idle", "closed"


Subscriber = Callable[[dict[str, Any] | None], None]
"""Receives each event (as its JSON dict) in order; ``None`` means the stream has ended."""


class EventLog:
    """Every event of a session as JSON dicts, pushed to live subscribers as it happens.

    It is an ``EventSink`` called by the loop on the server's event loop. Subscribers are
    called synchronously from ``emit`` (a WebSocket writes to its socket right away, not
    after the other sinks or a scheduling hop), and ``subscribe`` replays the backlog and
    registers in the same step, so a subscriber can neither miss an event nor see one twice.
    """

    def __init__(self, events: list[dict[str, Any]] | None = None) -> None:
        self.events: list[dict[str, Any]] = list(events or [])
        self._subscribers: list[Subscriber] = []

    def emit(self, event: ev.Event) -> None:
        self.append(event.to_dict())

    def append(self, data: dict[str, Any]) -> None:
        self.events.append(data)
        for send in list(self._subscribers):
            try:
                send(data)
            except Exception:
                log.exception("event subscriber failed; dropping it")
                self.unsubscribe(send)

    @property
    def next_seq(self) -> int:
        return self.events[-1]["seq"] + 1 if self.events else 0

    def since(self, seq: int) -> list[dict[str, Any]]:
        return [e for e in self.events if e["seq"] >= seq]

    def subscribe(self, send: Subscriber, since: int = 0) -> None:
        for data in self.since(since):
            send(data)
        self._subscribers.append(send)

    def unsubscribe(self, send: Subscriber) -> None:
        with contextlib.suppress(ValueError):
            self._subscribers.remove(send)

    def close(self) -> None:
        """Tell every subscriber that nothing more will come."""
        subscribers, self._subscribers = self._subscribers, []
        for send in subscribers:
            with contextlib.suppress(Exception):
                send(None)


class AgentSession:
    """A session: live (loop + sandbox) or, once closed or restored from disk, read-only."""

    def __init__(
        self,
        session_id: str,
        *,
        owner: str,
        path: Path,
        notebook_path: str | None = None,
        model: str = "",
        created: float | None = None,
        events: list[dict[str, Any]] | None = None,
        status: str | None = None,
    ) -> None:
        self.id = session_id
        self.owner = owner
        self.path = path
        self.notebook_path = notebook_path
        self.model = model
        self.created = created if created is not None else time.time()
        self.log = EventLog(events)
        self._status = status  # used when the events cannot say (a run that crashed)
        runs = [e for e in self.log.events if e["type"] == "run_started"]
        self.prompt = runs[0].get("prompt", "") if runs else ""
        self.loop: Any = None
        self.sandbox: Any = None
        self.recorder: Any = None
        self.task: asyncio.Task[Any] | None = None
        self.closed = False
        self.last_activity = time.monotonic()
        self._approvals: dict[str, asyncio.Future[bool]] = {}

    # -- state ----------------------------------------------------------------------------

    @property
    def state(self) -> str:
        if self.closed:
            return CLOSED
        if self.task is not None and not self.task.done():
            return RUNNING
        return IDLE if self.loop is not None else STARTING

    @property
    def status(self) -> str | None:
        """The last run's ``RunFinished.status``; None while a run is under way."""
        for event in reversed(self.log.events):
            if event["type"] == "run_finished":
                return str(event["status"])
            if event["type"] == "run_started":
                return None if self.running else self._status
        return self._status

    @property
    def running(self) -> bool:
        return self.state == RUNNING

    def summary(self) -> dict[str, Any]:
        events = self.log.events
        return {
            "id": self.id,
            "state": self.state,
            "status": self.status,
            "owner": self.owner,
            "model": self.model,
            "prompt": self.prompt,
            "notebook_path": self.notebook_path,
            "created": self.created,
            "events": len(events),
            "next_seq": self.log.next_seq,
            "pending_approvals": sorted(self._approvals),
        }

    def detail(self) -> dict[str, Any]:
        return {**self.summary(), "events": list(self.log.events)}

    # -- runs -----------------------------------------------------------------------------

    def attach(self, loop: Any, sandbox: Any, recorder: Any) -> None:
        self.loop, self.sandbox, self.recorder = loop, sandbox, recorder

    def start_run(self, prompt: str) -> None:
        """Start the first prompt or a follow-up in the same loop (history and kernel kept)."""
        if self.closed:
            raise ApiError(409, f"session {self.id} is closed; start a new session")
        if self.running:
            raise ApiError(409, f"session {self.id} is running; wait for it or cancel it first")
        if self.loop is None:
            raise ApiError(409, f"session {self.id} is still starting")
        self.last_activity = time.monotonic()
        self.prompt = self.prompt or prompt
        self.task = asyncio.ensure_future(self._run(prompt))

    async def _run(self, prompt: str) -> None:
        try:
            await self.loop.run(prompt)
        except asyncio.CancelledError:
            self._status = ev.CANCELLED
            raise
        except Exception:  # the loop records its own errors; this is a last resort
            log.exception("session %s: run failed", self.id)
            self._status = ev.ERROR
        finally:
            self.last_activity = time.monotonic()

    def cancel(self) -> bool:
        """Interrupt the running cell and stop the run; False when nothing was running."""
        if not self.running:
            return False
        self.loop.cancel("stopped by the user")
        return True

    async def approve(self, tool_call_id: str, name: str, arguments: Any) -> bool:
        """The loop's approver: waits until a client decides (or the run is stopped)."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._approvals[tool_call_id] = future
        try:
            return await future
        finally:
            self._approvals.pop(tool_call_id, None)

    def decide_approval(self, tool_call_id: str, approved: bool) -> None:
        future = self._approvals.get(tool_call_id)
        if future is None or future.done():
            decided = any(
                e["type"] == "approval_decided" and e.get("tool_call_id") == tool_call_id
                for e in self.log.events
            )
            if decided:
                raise ApiError(409, f"tool call {tool_call_id} was already decided")
            raise ApiError(404, f"no approval is waiting for tool call {tool_call_id}")
        future.set_result(approved)

    def decide_cell(self, cell_id: str, accepted: bool, recorder_factory: Any) -> dict[str, Any]:
        """Record the user's accept/reject of a finished code cell in events and notebook."""
        events = self.log.events
        started = any(
            e["type"] == "tool_call_started" and e.get("tool_call_id") == cell_id for e in events
        )
        finished = next(
            (
                e
                for e in events
                if e["type"] == "tool_call_finished" and e.get("tool_call_id") == cell_id
            ),
            None,
        )
        if finished is None:
            if started:
                raise ApiError(409, f"cell {cell_id} is still running")
            raise ApiError(404, f"session {self.id} has no cell {cell_id}")
        if finished.get("code") is None:
            raise ApiError(404, f"tool call {cell_id} did not produce a code cell")
        if self.loop is not None and not self.closed:
            # Through the loop: numbered in the session's sequence, seen by every sink.
            event = self.loop.emit(ev.CellDecision, cell_id=cell_id, accepted=accepted)
        else:
            # Read-only session: continue its notebook with a recorder of our own.
            event = ev.CellDecision(seq=self.log.next_seq, cell_id=cell_id, accepted=accepted)
            self.recorder = self.recorder or recorder_factory(self)
            self.recorder.emit(event)
            self.log.emit(event)
        return event.to_dict()

    # -- end ------------------------------------------------------------------------------

    async def close(self, *, grace_s: float = 10.0) -> None:
        """Stop the run (if any), shut the sandbox down, end every event stream."""
        if self.closed:
            return
        self.closed = True
        if self.task is not None and not self.task.done():
            self.loop.cancel("the session was closed")
            done, _ = await asyncio.wait({self.task}, timeout=grace_s)
            if not done:
                self.task.cancel()
                with contextlib.suppress(BaseException):
                    await self.task
        if self.sandbox is not None:
            try:
                await self.sandbox.shutdown()
            except Exception:
                log.exception("session %s: sandbox shutdown failed", self.id)
            self.sandbox = None
        self.log.close()
