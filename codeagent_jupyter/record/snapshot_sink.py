"""The event sink that snapshots the workspace after each step that ran code.

It subscribes to the session's bus *before* the notebook recorder, so that the snapshot of
a step is in the notebook's metadata by the time the recorder saves that step. The notebook
keeps, in ``metadata.codeagent.snapshots``, one entry per capture::

    {"run": 0, "step": 2, "tool_call_id": "call_1", "snapshot": "<id>", "files": 3,
     "changed": [...], "stored_bytes": 120, "large": [...], "skipped": {...}}

Step 0 of a run is the workspace as the run found it. Older notebooks simply have no
``snapshots`` key; nothing else of the format changes.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from .. import events as ev
from .snapshots import SnapshotStore, StoreFullError

log = logging.getLogger(__name__)


class SnapshotRecorder:
    """Captures ``workdir`` into ``store`` and lists each capture in ``meta['snapshots']``.

    ``meta`` is the session notebook's ``metadata.codeagent`` (the recorder's own node), so
    the entry is written with the step it belongs to. A failing capture is logged and noted
    in the entry; it never stops the run. ``session`` names the session the snapshots are
    kept for in the store (what a full store may collect once it is closed).
    """

    def __init__(
        self,
        store: SnapshotStore,
        workdir: Path,
        meta: dict[str, Any],
        session: str | None = None,
    ) -> None:
        self.store = store
        self.workdir = Path(workdir)
        self.meta = meta
        self.session = session
        self.run = 0

    def emit(self, event: ev.Event) -> None:
        if isinstance(event, ev.RunStarted):
            self.run = event.run_index
            self.capture(0, "")
        elif (
            isinstance(event, ev.ToolCallFinished)
            and event.tool.writes_workspace
            and event.status not in ev.NOT_RUN
        ):
            self.capture(event.step, event.tool_call_id)

    def capture(self, step: int, tool_call_id: str) -> dict[str, Any] | None:
        """Snapshot now and record it for (current run, ``step``); the entry, or None."""
        entries = self.meta.setdefault("snapshots", [])
        previous = entries[-1]["snapshot"] if entries and entries[-1].get("snapshot") else None
        entry: dict[str, Any] = {"run": self.run, "step": step, "tool_call_id": tool_call_id}
        try:
            entry |= self.store.capture(self.workdir, previous, session=self.session).to_dict()
        except StoreFullError as exc:
            log.warning("workspace snapshot not taken: %s", exc)
            entry["error"] = str(exc)
        except Exception as exc:  # a snapshot is worth having, never worth a failed run
            log.exception("workspace snapshot failed")
            entry["error"] = f"{type(exc).__name__}: {exc}"
        entries.append(entry)
        return entry

    def status(self) -> dict[str, Any]:
        """What the session summary says of its snapshots: how many were taken, how many
        left files out for want of room (or failed), and why."""
        entries = self.meta.get("snapshots", [])
        full = self.store.settings.full_reason
        short = [e for e in entries if e.get("error") or full in (e.get("skipped") or {}).values()]
        reasons = sorted({e.get("error") or full for e in short})
        return {
            "taken": sum(1 for e in entries if e.get("snapshot")),
            "skipped": len(short),
            "why": reasons[:5],
        }
