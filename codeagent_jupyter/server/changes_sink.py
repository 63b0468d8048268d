"""Each server session keeps its notebook ending with its change set (``changes_cell``).

Apart from the routes (``server.changes``) so that ``revive``, which subscribes a session's
sinks, depends on this alone and not on the HTTP handlers.

The change set is computed from files the sandbox wrote, so never on the event loop: at a
run's end the sink hands it to the worker pool (``offloop``) and places the cell when it
comes back. The session's run task waits for that (``settled``) before the session counts
as idle, so whoever sees an idle session sees its notebook's last cell too. One lock per
session keeps a revert and a run's end from placing their cells out of order.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from .. import events as ev
from ..record.changes import ChangeSet, NoSnapshots, session_changes
from ..record.changes_cell import inside, place
from .offloop import off_loop

log = logging.getLogger(__name__)


def own_paths(manager: Any, session: Any, workdir: Path) -> frozenset[str]:
    """What a change set leaves out: the user's notebook, which they save themselves while
    the session runs (a revert must never put an old copy of it back), and the session
    notebook, should the sessions folder lie in the workspace."""
    user = manager.root_dir / session.notebook_path if session.notebook_path else None
    return inside(workdir, user, session.path)


def frozen(meta: dict[str, Any]) -> dict[str, Any]:
    """What a change set reads of the notebook's metadata, copied on the event loop so that
    a worker never iterates what the loop is appending to."""
    entries = meta.get("snapshots") or []
    events = meta.get("events") or []
    return {
        "session_id": meta.get("session_id", ""),
        "snapshots": [dict(e) for e in entries if isinstance(e, dict)],
        "events": [  # the requests through the egress broker, for the change set's summary
            dict(e) for e in events if isinstance(e, dict) and e.get("type") == "network_request"
        ],
    }


def whole_changes(meta: dict[str, Any], store: Any, exclude: frozenset[str]) -> ChangeSet | None:
    """The whole session's change set (None without snapshots); runs in a worker."""
    try:
        return session_changes(meta, store, exclude=exclude)
    except NoSnapshots:
        return None


class ServerChangesCell:
    """The server's change-set sink: ``ChangesCell``'s job, with the work off the loop."""

    def __init__(self, store: Any, recorder: Any, exclude: frozenset[str], session: Any) -> None:
        self.session = session
        self.store = store
        self.recorder = recorder
        self.exclude = exclude
        self.lock = asyncio.Lock()
        """Held while a change set is computed and placed (a run's end, a revert)."""
        self.last: ChangeSet | None = None
        self._pending: asyncio.Future[None] | None = None

    def emit(self, event: ev.Event) -> None:
        if isinstance(event, ev.RunFinished):
            self._pending = asyncio.ensure_future(self.update())

    async def update(self) -> ChangeSet | None:
        """Recompute in a worker, place the cell and save. Never raises: the cell is a
        summary, not worth a failed run."""
        async with self.lock:
            snapshots = self.session.snapshots
            if snapshots is not None and hasattr(snapshots, "settled"):
                await snapshots.settled()  # the run's last snapshot is listed
            recorder = self.recorder
            meta = frozen(recorder.notebook.metadata["codeagent"])
            try:
                self.last = await off_loop(whole_changes, meta, self.store, self.exclude)
            except Exception:
                log.exception("the session's change set could not be computed")
                self.last = None
            place(recorder.notebook, self.last)
            recorder.save()
            return self.last

    async def settled(self) -> None:
        """Wait for the change set of the run that just ended to be in the notebook."""
        pending = self._pending
        if pending is not None:
            await asyncio.shield(pending)

    def line(self) -> str | None:
        """The one-line summary (``3 files changed: …``), or None without snapshots."""
        return self.last.summary() if self.last is not None else None


def attach(manager: Any, session: Any, recorder: Any, workdir: Path) -> None:
    """Keep ``recorder``'s notebook ending with the change set: the sink goes (again) to
    the end of the bus, after the recorder, which adds the answer first."""
    store = manager.snapshots.store_for(session.owner)
    exclude = own_paths(manager, session, workdir)
    if session.changes is not None:
        session.bus.unsubscribe(session.changes.emit)
        changes = session.changes
        changes.recorder, changes.store, changes.exclude = recorder, store, exclude
    else:
        session.changes = ServerChangesCell(store, recorder, exclude, session)
    session.bus.subscribe(session.changes.emit)
