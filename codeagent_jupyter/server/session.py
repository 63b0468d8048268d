"""One agent session held by the server: its loop, sandbox, recording and event bus.

A session outlives any one client: its ``EventBus`` keeps every event in order, so a WebSocket
that connects late (or reconnects with ``since``) is replayed everything it missed, then
follows live. What the server answers about a session (status, which cells can be decided,
which approvals were given) comes from the same fold of those events that the panel draws
(``fold.reduce``). The session notebook on disk is the durable copy; after a restart a
session is rebuilt from it, read-only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import events as ev
from ..core.bus import EventBus
from ..timeline.fold import fold, reduce
from ..timeline.state import RUNNING as RUN_UNDER_WAY
from ..timeline.state import CellItem
from .errors import ApiError
from .net_approvals import NetworkApprovals

log = logging.getLogger(__name__)

STARTING, RUNNING, IDLE, CLOSED = "starting", "running", "idle", "closed"
TITLE_CHARS = 80
"""How much of the first request ``summary()["title"]`` shows (its first line)."""


@dataclass(frozen=True)
class Waiting:
    """A tool call waiting for the user's decision, as the loop asked it (name, arguments)."""

    future: asyncio.Future[bool]
    name: str
    arguments: Any


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
        events: list[ev.Event] | None = None,
        status: str | None = None,
    ) -> None:
        self.id = session_id
        self.owner = owner
        self.path = path
        self.notebook_path = notebook_path
        self.variables: list[str] = []
        """The user's variables copied into the sandbox at start (``@name`` resolves)."""
        self.model = model
        self.created = created if created is not None else time.time()
        self.bus = EventBus(history=events or [])
        self.view = fold(self.bus.events)
        """The session folded from its events (kept current by a subscription to the bus)."""
        self.bus.subscribe(self._track)
        self._status = status  # used when the events cannot say (a run that crashed)
        self._asked = ""
        self._asked_title = ""
        self.loop: Any = None
        self.sandbox: Any = None
        self.recorder: Any = None
        self.task: asyncio.Task[Any] | None = None
        self._settling: asyncio.Task[Any] | None = None
        """The run task that has ended and is placing its change set (a follow-up waits)."""
        self.closed = False
        self.closed_reason: str | None = None
        """Why the sandbox was released (``lifecycle.CLOSED_REASONS``); None while open."""
        self.kernel_id: str | None = None
        """The user's kernel that started the session: its notebook is looked up by it."""
        self.last_activity = time.monotonic()
        self.updated = self.created
        """Wall-clock time of the last event or run start (for a list of sessions)."""
        self._approvals: dict[str, Waiting] = {}
        self.allowed: set[str] = set()
        """Tools the user allowed for the rest of the session ("allow for this session")."""
        self.paused = False
        self.deleted = False
        """Closed by DELETE: not resumed by a message (409), though it may be forked."""
        """Closed by ``pause``: the sandbox is gone, a message resumes the session."""
        self.restored: dict[str, Any] | None = None
        """How the last resume rebuilt the session (``summary``: "restored from step N …")."""
        self.restoring: asyncio.Task[None] | None = None
        """A resume or fork rebuilding this session in the background (``revive``)."""
        self.snapshots: Any = None
        """The session's snapshot sink, once subscribed (one per session)."""
        self.changes: Any = None
        """The sink keeping the notebook's change-set cell (``server.changes.attach``)."""
        self.source: str | None = None
        """For a fork: the session it was forked from (its snapshots are being read)."""
        self.network = NetworkApprovals(self.bus)
        """Questions about hosts under ``default: ask`` and their answers (``net_approvals``)."""
        self.hooks: Any = None
        self.installs: Any = None
        """The session's ``install_packages`` tool (None when installs are off)."""
        """The ``HookChain`` of the session's current loop, if hooks are enabled."""

    # -- state ----------------------------------------------------------------------------

    def _track(self, event: ev.Event) -> None:
        self.view = reduce(self.view, event)
        self.updated = time.time()

    def touch(self) -> None:
        """Activity: the idle reaper and the session cap measure idleness from here."""
        self.last_activity = time.monotonic()
        self.updated = time.time()

    @property
    def busy(self) -> bool:
        """Running, starting or being rebuilt: its sandbox is never taken away for room."""
        return not self.closed and (self.state != IDLE or self.restoring is not None)

    @property
    def prompt(self) -> str:
        """The first request (known from ``start_run`` on, before its run has started)."""
        return self.view.prompt or self._asked

    @property
    def title(self) -> str:
        """The first request as people read it: its ``title`` when the client sent one (a
        ``%agent fix``: "Fix In [9]: …"), else the prompt's first line; bounded."""
        title = self.view.title or self._asked_title
        title = title or self.prompt.strip().split("\n", 1)[0]
        return title if len(title) <= TITLE_CHARS else title[: TITLE_CHARS - 1] + "…"

    @property
    def state(self) -> str:
        if self.closed:
            return CLOSED
        if self.task is not None and not self.task.done() and self._settling is not self.task:
            return RUNNING  # a run whose change set is being placed is over for its user
        return IDLE if self.loop is not None else STARTING

    @property
    def status(self) -> str | None:
        """The last run's ``RunFinished.status``; None while a run is under way."""
        status = self.view.status
        if status == RUN_UNDER_WAY:
            return None if self.running else self._status
        return self._status if status == "idle" else status

    @property
    def running(self) -> bool:
        return self.state == RUNNING

    def summary(self) -> dict[str, Any]:
        prompt = self.prompt
        return {
            "id": self.id,
            "state": self.state,
            "status": self.status,
            "owner": self.owner,
            "model": self.model,
            "prompt": prompt,
            "title": self.title,
            "notebook_path": self.notebook_path,
            "created": self.created,
            "updated": self.updated,
            "busy": self.busy,
            "closed_reason": self.closed_reason,
            "resumable": self.closed and not self.deleted and self.restoring is None,
            "events": len(self.bus.events),
            "next_seq": self.bus.next_seq,
            "pending_approvals": sorted(self._approvals),
            "allowed_tools": sorted(self.allowed),
            "pending_network_approvals": self.network.pending,
            "allowed_hosts": sorted(self.network.allowed),
            "paused": self.paused,
            "restored": self.restored,
            "snapshots": self.snapshots.status() if self.snapshots is not None else None,
            "installs": self.installs is not None,  # POST …/packages is offered
        }

    def detail(self) -> dict[str, Any]:
        return {**self.summary(), "events": [e.to_dict() for e in self.bus.events]}

    # -- runs -----------------------------------------------------------------------------

    def attach(self, loop: Any, sandbox: Any, recorder: Any) -> None:
        self.loop, self.sandbox, self.recorder = loop, sandbox, recorder

    def start_run(self, prompt: str, title: str = "") -> None:
        """Start the first prompt or a follow-up in the same loop (history and kernel kept);
        ``title``: how the request reads to people (``RunStarted.title``)."""
        if self.closed:
            raise ApiError(409, f"session {self.id} is closed; start a new session")
        settling = self.task is not None and self._settling is self.task  # its cell, only
        if self.running:
            raise ApiError(409, f"session {self.id} is running; wait for it or cancel it first")
        if self.changes is not None and self.changes.lock.locked() and not settling:
            raise ApiError(409, f"session {self.id} is reverting a file; send it again in a moment")
        if self.loop is None:
            raise ApiError(409, f"session {self.id} is still starting")
        self.touch()
        if not self._asked:
            self._asked, self._asked_title = prompt, title
        previous = self.task if settling else None
        self.task = asyncio.ensure_future(self._run(prompt, title, previous))

    async def _run(self, prompt: str, title: str, previous: asyncio.Task[Any] | None) -> None:
        from ..models.openai_chat import current_session

        if previous is not None:  # a follow-up sent as the last run ended: its cell goes first
            await asyncio.wait({previous})
        if self.changes is not None:
            async with self.changes.lock:  # and no revert is writing the workspace
                pass
        current_session.set(self.id)  # this task's requests carry the session id
        try:
            await self.loop.run(prompt, title=title)
        except asyncio.CancelledError:
            self._status = ev.CANCELLED
            raise
        except Exception:  # the loop records its own errors; this is a last resort
            log.exception("session %s: run failed", self.id)
            self._status = ev.ERROR
        finally:
            self.touch()
        if self.changes is not None:  # idle for its user; the notebook route and a follow-up wait
            self._settling = asyncio.current_task()
            try:
                await self.changes.settled()
            finally:
                if self._settling is asyncio.current_task():
                    self._settling = None

    async def settled(self) -> None:
        """Wait until the last run's workspace snapshots and change set are in its notebook
        (workers place them after ``run_finished``); what reads them waits for this."""
        settled = getattr(self.changes, "settled", None)
        if settled is not None:
            await settled()

    def cancel(self) -> bool:
        """Interrupt the running cell and stop the run; False when nothing was running."""
        if not self.running:
            return False
        self.loop.cancel("stopped by the user")
        return True

    async def approve(self, tool_call_id: str, name: str, arguments: Any) -> tuple[bool, str]:
        """The loop's approver: a tool the user allowed for the session is approved at once;
        otherwise waits until a client decides (or the run is stopped).

        What waits is recorded here with the call's own tool name and arguments, as the loop
        asked: a decision (and "allow for this session") binds to them, never to whatever
        else the timeline shows under the same model-chosen id."""
        if name in self.allowed:
            return True, "session"
        if tool_call_id in self._approvals:  # the loop refuses reused ids; never rebind one
            return False, ""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._approvals[tool_call_id] = Waiting(future, name, arguments)
        try:
            approved = await future
        finally:
            self._approvals.pop(tool_call_id, None)
        return approved, "session" if approved and name in self.allowed else ""

    def decide_approval(self, tool_call_id: str, approved: bool, remember: str = "") -> None:
        """Answer a waiting call; ``remember="session"`` with an approval also allows the
        waiting call's own tool for every later call of this session (never a denial: a
        denied tool is asked again)."""
        waiting = self._approvals.get(tool_call_id)
        if waiting is None or waiting.future.done():
            asked = self.view.approval(tool_call_id)
            if asked is not None and asked.approved is not None:
                raise ApiError(409, f"tool call {tool_call_id} was already decided")
            raise ApiError(404, f"no approval is waiting for tool call {tool_call_id}")
        if approved and remember == "session":
            self.allowed.add(waiting.name)
        waiting.future.set_result(approved)

    def decide_cell(self, cell_id: str, accepted: bool, recorder_factory: Any) -> dict[str, Any]:
        """Record the user's accept/reject of a finished code cell in events and notebook.

        Published on the session's bus like every event: numbered there, recorded by the
        session's recorder (a closed session's notebook is reopened for it).
        """
        item = self.view.tool_call(cell_id)
        if item is None:
            raise ApiError(404, f"session {self.id} has no cell {cell_id}")
        if not isinstance(item, CellItem):
            if not item.finished:
                raise ApiError(409, f"cell {cell_id} is still running")
            raise ApiError(404, f"tool call {cell_id} did not produce a code cell")
        if not item.finished or item.status == "cancelled":
            raise ApiError(409, f"cell {cell_id} is still running")
        if not item.ran:
            raise ApiError(404, f"tool call {cell_id} did not produce a code cell")
        if self.recorder is None:  # a read-only session: continue its notebook
            self.recorder = recorder_factory(self)
            self.bus.subscribe(self.recorder.emit)
        event = self.bus.publish(ev.CellDecision, cell_id=cell_id, accepted=accepted)
        return event.to_dict()

    # -- end ------------------------------------------------------------------------------

    async def close(self, *, grace_s: float = 10.0, reason: str | None = None) -> None:
        """Stop the run (if any), shut the sandbox down, end every event stream.

        ``closed`` is set before the first ``await``, so the session stops counting as open
        the moment ``close`` is called (the session cap relies on it).
        """
        if self.closed:
            return
        self.closed = True
        self.closed_reason = reason or self.closed_reason
        if self.restoring is not None:  # its cells are being re-run: stop that, and its sandbox
            self.restoring.cancel()
            with contextlib.suppress(BaseException):
                await self.restoring
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
        self.bus.close()
