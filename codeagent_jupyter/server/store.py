"""Sessions from an earlier server life, rebuilt read-only from their notebooks.

Only notebooks the server signed when it wrote them are loaded: a file dropped into or
edited in the sessions folder (by sandbox code, another user, a copy from elsewhere) is
skipped with a log line, so it can neither claim an owner nor inject events.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from .. import events as ev
from .lifecycle import SERVER_STOPPED
from .session import AgentSession
from .signing import SessionSigner

INTERRUPTED_REASON = "the server stopped while this run was in progress"
MAX_NOTEBOOK_BYTES = 512 * 1024 * 1024
"""A session notebook larger than this is not loaded (the recorder bounds outputs)."""


def read_regular(path: Path) -> str:
    """The text of ``path`` if it is a regular file (a link or a FIFO is refused)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        if info.st_size > MAX_NOTEBOOK_BYTES:
            raise OSError(f"{path.name} is larger than {MAX_NOTEBOOK_BYTES} bytes")
        return f.read().decode("utf-8")


def _load_text(text: str, scratch: Path) -> Any:
    """``load_session`` of exactly ``text`` (it reads paths, so through a private copy)."""
    from ..record.recorder import load_session

    fd, name = tempfile.mkstemp(dir=scratch, suffix=".ipynb")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        return load_session(Path(name))
    finally:
        os.unlink(name)


def load_saved_sessions(
    sessions_dir: Path, log: logging.Logger, signer: SessionSigner, scratch: Path
) -> list[AgentSession]:
    """Every signed session notebook in ``sessions_dir``; a run cut off by a crash is closed
    as ``interrupted`` in its notebook, so the recording says what happened. ``scratch`` is
    a directory only the server writes (for the private copies that are loaded)."""
    if not sessions_dir.is_dir():
        return []
    sessions = []
    for path in sorted(sessions_dir.glob("*.ipynb")):
        try:
            text = read_regular(path)
        except (OSError, UnicodeDecodeError) as e:
            log.warning("codeagent: not loading session %s: %s", path.name, e)
            continue
        refused = signer.verify(path, text)
        if refused is not None:
            log.warning("codeagent: not loading session %s: %s", path.name, refused)
            continue
        try:
            record = _load_text(text, scratch)
        except Exception as e:
            log.warning("codeagent: skipping %s: %s", path.name, e)
            continue
        if record.session_id != path.stem:  # a signed notebook copied under another id
            log.warning("codeagent: not loading session %s: it is %s", path.name, record.session_id)
            continue
        meta = record.notebook.metadata.get("codeagent", {})
        extra = (meta.get("config") or {}).get("extra_context") or {}
        cut_off = record.status == "running"
        session = AgentSession(
            path.stem,
            owner=str(extra.get("owner", "")),
            path=path,
            notebook_path=extra.get("notebook_path"),
            model=record.model,
            created=(meta.get("timings") or {}).get("started"),
            events=list(record.events),
            status=ev.INTERRUPTED if cut_off else record.status,
        )
        if cut_off:  # the run a crash cut short ends, in the events and in the notebook
            try:
                session.recorder = signer.reopen(path)
                session.bus.subscribe(session.recorder.emit)
            except Exception as e:
                log.warning("codeagent: cannot mark %s interrupted: %s", path.name, e)
            session.bus.publish(ev.RunFinished, status=ev.INTERRUPTED, reason=INTERRUPTED_REASON)
        session.closed = True
        session.closed_reason = SERVER_STOPPED
        updated = (meta.get("timings") or {}).get("finished")
        if isinstance(updated, int | float):
            session.updated = float(updated)
        sessions.append(session)
    return sessions


def load_into(manager: Any, old_sessions_dir: str) -> None:
    """Add the signed sessions under ``manager.sessions_dir`` to ``manager.sessions``.

    Sessions in the old default folder inside the server root (``old_sessions_dir``) are
    left where they are and not loaded: sandbox code could have written them. They stay
    readable notebooks.
    """
    sessions_dir, root_dir, log = manager.sessions_dir, manager.root_dir, manager.log
    sessions_dir.mkdir(parents=True, exist_ok=True)
    if sessions_dir.resolve().is_relative_to(root_dir.resolve()):
        log.warning(
            "codeagent: sessions_dir %s is inside the server root, where sandbox code can "
            "write; only notebooks this server signed are loaded from it",
            sessions_dir,
        )
    old = root_dir / old_sessions_dir
    if old != sessions_dir and old.is_dir() and any(old.glob("*.ipynb")):
        log.info(
            "codeagent: sessions in %s (the old default, inside the server root) are "
            "not loaded; sessions are now kept in %s",
            old,
            sessions_dir,
        )
    for session in load_saved_sessions(sessions_dir, log, manager.signer, manager.state_dir):
        manager.sessions[session.id] = session
