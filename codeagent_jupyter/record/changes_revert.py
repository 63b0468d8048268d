""" "Revert this file": put one path back the way it was before the session.

The version from before is the session's first snapshot (step 0 of run 0); its bytes come
from the snapshot store, checked against their hash, and are written through
``confined.Workspace`` (a file the session created is removed through ``confined_remove``),
so a symlink or FIFO planted in the workspace is refused, never followed. Unless
``force``, the file must still be what the session's last snapshot holds: a later edit of
the user's is not overwritten silently.

The revert is recorded as a snapshot of its own, appended to the notebook's list with
``"revert": path``: the last snapshot with only that path changed back (``store.derive``;
nothing else of the workspace is read or attributed to the session). So the session's
change set no longer lists the file, and a resume restores the reverted state.
"""

from __future__ import annotations

import hashlib
import stat as stat_mod
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CodeAgentError
from ..util.confined import ConfinementError, TooLargeError, Workspace
from ..util.confined_remove import remove_file


class RevertError(CodeAgentError):
    """The path cannot be reverted; ``status`` is the HTTP status that says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Reverted:
    path: str
    action: str
    """``restored`` (written back) or ``removed`` (the session had created it)."""
    snapshot: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "action": self.action, "snapshot": self.snapshot}


def revert(
    store: Any,
    meta: dict[str, Any],
    workdir: Path,
    path: str,
    *,
    force: bool = False,
    session: str | None = None,
    exclude: frozenset[str] = frozenset(),
) -> Reverted:
    """Put ``path`` back as the session's first snapshot has it; the entry is appended to
    ``meta["snapshots"]`` (the caller saves the notebook). ``exclude``: paths the change set
    leaves out, which are never reverted either."""
    try:
        path = Workspace.relpath(path)
    except ConfinementError as exc:
        raise RevertError(400, str(exc)) from None
    if path in exclude:
        raise RevertError(404, f"{path} is not part of this session's change set")
    entries = meta.get("snapshots") or []
    good = [e for e in entries if isinstance(e, dict) and e.get("snapshot")]
    if not good:
        raise RevertError(409, "the session has no workspace snapshots to revert from")
    first, last = good[0], good[-1]
    try:
        old = store.manifest(first["snapshot"])["files"].get(path)
        new = store.manifest(last["snapshot"])["files"].get(path)
    except CodeAgentError as exc:
        raise RevertError(409, str(exc)) from None
    if old == new or (old and new and old.get("sha256") and old.get("sha256") == new.get("sha256")):
        raise RevertError(404, f"{path} was not changed by this session")
    if old is not None and "sha256" not in old:
        raise RevertError(
            409,
            f"{path} was larger than the snapshot store copies before the session, so its "
            "earlier version was only referenced and cannot be put back",
        )
    ws = Workspace(workdir)
    if not force:
        _check_unchanged(ws, path, new, store.settings.large_file_bytes)
    try:
        if old is None:
            remove_file(ws, path)
            action = "removed"
        else:
            ws.write_bytes(path, _content(store, old, path))
            action = "restored"
    except FileNotFoundError:
        action = "removed"  # gone already: what was asked for
    except (ConfinementError, OSError) as exc:
        raise RevertError(409, _reason(exc, path)) from None
    snapshot = store.derive(last["snapshot"], {path: old}, session=session)
    entry = {key: last.get(key) for key in ("run", "step", "large", "skipped") if key in last}
    entry |= {"tool_call_id": "", "snapshot": snapshot, "revert": path, "changed": [path]}
    entry["files"] = int(last.get("files", 0)) + (old is not None) - (new is not None)
    meta.setdefault("snapshots", []).append(entry)
    return Reverted(path, action, snapshot)


def _check_unchanged(ws: Workspace, path: str, record: dict[str, Any] | None, limit: int) -> None:
    """Refuse (409) when the workspace's ``path`` is not what the last snapshot recorded."""
    changed = RevertError(
        409,
        f"{path} changed since the session's last snapshot; revert it anyway with force",
    )
    try:
        st = ws.stat(path)
    except FileNotFoundError:
        if record is None:
            return
        raise changed from None
    except (ConfinementError, OSError) as exc:
        raise RevertError(409, _reason(exc, path)) from None
    if record is None or not stat_mod.S_ISREG(st.st_mode):
        raise changed
    if st.st_size == record.get("size") and st.st_mtime_ns == record.get("mtime_ns"):
        return
    if "sha256" not in record:
        raise changed
    try:
        data = ws.read_bytes(path, limit)
    except (TooLargeError, ConfinementError, OSError):
        raise changed from None
    if hashlib.sha256(data).hexdigest() != record["sha256"]:
        raise changed


def _content(store: Any, record: dict[str, Any], path: str) -> bytes:
    try:
        data = store.content(record)
    except OSError:
        raise RevertError(409, f"{path}: its earlier content is missing from the store") from None
    if hashlib.sha256(data).hexdigest() != record["sha256"]:
        raise RevertError(409, f"{path}: its earlier content in the store is damaged")
    return data


def _reason(exc: BaseException, path: str) -> str:
    if isinstance(exc, OSError) and not isinstance(exc, ConfinementError) and exc.strerror:
        return f"{path}: {exc.strerror}"
    return str(exc).splitlines()[0]
