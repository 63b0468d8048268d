"""``GET /codeagent/api/sessions/{id}/changes[?step=N]`` and ``POST …/changes/revert``.

The change set of a session (or of its step N) is computed from the session notebook's
snapshot list and the owner's snapshot store (``record.changes``): 200 with
``{"available": true, "summary", "files": [...], ...}``, or ``"available": false`` and a
``message`` for a session without snapshots; 400 for a step the session does not have.
Each file carries its bounded diff (or cells, or image dimensions and a thumbnail as a data
URL) and whether it can be reverted.

``POST …/changes/revert`` with ``{"path", "force"?}`` puts one path back as it was before
the session (``record.changes_revert``), through the confined workspace of the folder the
session works in; 409 while the session runs, when the file changed since the session's
last snapshot (unless ``force``) or cannot be put back, 404 for a path the session did
not change. The answer is ``{"reverted": {...}, "changes": <the new change set>}``.

Both routes are the owner's, as every route: another user gets 404 (a reader of a read
group may look, not revert: 403). The session notebook's last cell (``changes_cell``) is
kept in step with every run's end and every revert.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import authorized

from ..errors import ConfigError
from ..record.changes import NoSnapshots, known_steps, session_changes
from ..record.changes_cell import place
from ..record.changes_revert import RevertError, revert
from ..record.reader import parse_session
from .bodies import body_schema
from .changes_sink import own_paths
from .errors import ApiError
from .handlers import BaseHandler
from .signing import UnsignedNotebook
from .store import read_regular

_ID = r"([^/]+)"
REVERT = body_schema({"path": "string"}, {"force": "boolean"})
"""The body of ``POST …/changes/revert``."""


def _notebook(manager: Any, session: Any) -> Any:
    """The session notebook: the live recorder's, else the signed file on disk."""
    if session.recorder is not None:
        return session.recorder.notebook
    try:
        text = read_regular(session.path)
    except (OSError, UnicodeDecodeError):
        raise ApiError(404, f"session {session.id} has no notebook on disk yet") from None
    refused = manager.signer.verify(session.path, text)
    if refused is not None:
        raise ApiError(409, f"session {session.id}: its notebook is {refused}")
    try:
        return parse_session(text, session.path)
    except ConfigError as e:
        raise ApiError(409, str(e)) from None


def workdir_of(manager: Any, session: Any) -> Path:
    """The folder the session works in: its snapshot sink's, else its notebook's."""
    if session.snapshots is not None:
        return Path(session.snapshots.workdir)
    return Path(manager.resolver.workdir_for(session.notebook_path))


def change_set(manager: Any, session: Any, notebook: Any, step: int | None) -> dict[str, Any]:
    """The JSON of a change set (what both routes answer)."""
    store = manager.snapshots.store_for(session.owner)
    meta = notebook.metadata["codeagent"]
    exclude = own_paths(manager, session, workdir_of(manager, session))
    try:
        steps = known_steps(notebook)
        changes = session_changes(
            meta, store, step=step, steps=steps, thumbnails=True, exclude=exclude
        )
    except NoSnapshots as e:
        return {"available": False, "message": f"the session {e}", "files": [], "summary": ""}
    except ConfigError as e:
        raise ApiError(400, str(e)) from None
    return {"available": True, **changes.to_dict()}


class ChangesHandler(BaseHandler):
    @authorized
    async def get(self, session_id: str) -> None:
        session = self.session(session_id)
        raw = self.get_argument("step", None)
        step = None
        if raw is not None:
            if not raw.isdigit() or int(raw) <= 0 or len(raw) > 9:
                raise ApiError(400, "step must be a positive whole number")
            step = int(raw)
        notebook = _notebook(self.manager, session)
        self.reply({"session_id": session.id, **change_set(self.manager, session, notebook, step)})


class RevertHandler(BaseHandler):
    @authorized
    async def post(self, session_id: str) -> None:
        session = self.session(session_id, change=True)  # 404 before 400
        body = self.json_body(REVERT)
        if session.busy:
            raise ApiError(409, f"session {session_id} is running; wait for it or cancel it first")
        manager = self.manager
        recorder = session.recorder
        if recorder is None:  # a closed session read from disk: continue its notebook
            try:
                recorder = manager.signer.reopen(session.path)
            except (UnsignedNotebook, OSError) as e:
                raise ApiError(409, f"session {session_id} cannot be changed: {e}") from None
        workdir = workdir_of(manager, session)
        meta = recorder.notebook.metadata["codeagent"]
        store = manager.snapshots.store_for(session.owner)
        exclude = own_paths(manager, session, workdir)
        try:
            done = revert(
                store,
                meta,
                workdir,
                body["path"],
                force=bool(body.get("force")),
                session=session.id,
                exclude=exclude,
            )
        except RevertError as e:
            raise ApiError(e.status, str(e)) from None
        answer = change_set(manager, session, recorder.notebook, None)
        try:
            place(recorder.notebook, session_changes(meta, store, exclude=exclude))
        except NoSnapshots:
            place(recorder.notebook, None)
        recorder.save()
        self.reply({"reverted": done.to_dict(), "changes": {"session_id": session.id, **answer}})


def routes() -> list[tuple[str, type]]:
    s = f"/codeagent/api/sessions/{_ID}"
    return [(f"{s}/changes/?", ChangesHandler), (f"{s}/changes/revert", RevertHandler)]
