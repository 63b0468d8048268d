"""Sessions from an earlier server life, rebuilt read-only from their notebooks."""

from __future__ import annotations

import logging
from pathlib import Path

from .. import events as ev
from .session import AgentSession

INTERRUPTED_REASON = "the server stopped while this run was in progress"


def load_saved_sessions(sessions_dir: Path, log: logging.Logger) -> list[AgentSession]:
    """Every session notebook in ``sessions_dir``; a run cut off by a crash is closed as
    ``interrupted`` in its notebook, so the recording says what happened."""
    from ..recorder import NotebookRecorder, load_session

    if not sessions_dir.is_dir():
        return []
    sessions = []
    for path in sorted(sessions_dir.glob("*.ipynb")):
        try:
            record = load_session(path)
        except Exception as e:
            log.warning("codeagent: skipping %s: %s", path.name, e)
            continue
        events = [e.to_dict() for e in record.events]
        status = record.status
        if status == "running":
            seq = events[-1]["seq"] + 1 if events else 0
            finished = ev.RunFinished(seq=seq, status=ev.INTERRUPTED, reason=INTERRUPTED_REASON)
            try:
                NotebookRecorder(path).emit(finished)
            except Exception as e:
                log.warning("codeagent: cannot mark %s interrupted: %s", path.name, e)
            events.append(finished.to_dict())
            status = ev.INTERRUPTED
        meta = record.notebook.metadata.get("codeagent", {})
        extra = (meta.get("config") or {}).get("extra_context") or {}
        session = AgentSession(
            path.stem,
            owner=str(extra.get("owner", "")),
            path=path,
            notebook_path=extra.get("notebook_path"),
            model=record.model,
            created=(meta.get("timings") or {}).get("started"),
            events=events,
            status=status,
        )
        session.closed = True
        sessions.append(session)
    return sessions
