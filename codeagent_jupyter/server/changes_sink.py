"""Each server session keeps its notebook ending with its change set (``changes_cell``).

Apart from the routes (``server.changes``) so that ``revive``, which subscribes a session's
sinks, depends on this alone and not on the HTTP handlers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..record.changes_cell import ChangesCell, inside


def own_paths(manager: Any, session: Any, workdir: Path) -> frozenset[str]:
    """What a change set leaves out: the user's notebook, which they save themselves while
    the session runs (a revert must never put an old copy of it back), and the session
    notebook, should the sessions folder lie in the workspace."""
    user = manager.root_dir / session.notebook_path if session.notebook_path else None
    return inside(workdir, user, session.path)


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
        session.changes = ChangesCell(store, recorder, exclude)
    session.bus.subscribe(session.changes.emit)
