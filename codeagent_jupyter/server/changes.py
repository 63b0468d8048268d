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

import contextlib
from pathlib import Path
from typing import Any

from jupyter_server.auth.decorator import authorized

from ..errors import ConfigError
from ..record.changes import NoSnapshots, known_steps, session_changes
from ..record.changes_cell import place
from ..record.changes_revert import RevertError, revert
from ..record.reader import parse_session
from .bodies import body_schema
from .changes_sink import frozen, own_paths, whole_changes
from .errors import ApiError
from .handlers import BaseHandler
from .offloop import off_loop
from .signing import UnsignedNotebook
from .store import read_regular

_ID = r"([^/]+)"
REVERT = body_schema({"path": "string"}, {"force": "boolean"})
"""The body of ``POST …/changes/revert``."""


def _notebook(manager: Any, session: Any) -> Any:
    """The session notebook from its signed file on disk (a session without a live
    recorder). Runs in a worker: the file holds what the sandbox printed."""
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


def _inputs(notebook: Any) -> tuple[dict[str, Any], list[tuple[int, int]]]:
    """What a change set reads of ``notebook``, copied (on the loop, for a live one)."""
    return frozen(notebook.metadata["codeagent"]), known_steps(notebook)


def _compute(
    meta: dict[str, Any], steps: list[tuple[int, int]], store: Any, step: int | None, exclude: Any
) -> dict[str, Any]:
    """The JSON of a change set (what both routes answer); runs in a worker."""
    try:
        changes = session_changes(
            meta, store, step=step, steps=steps, thumbnails=True, exclude=exclude
        )
    except NoSnapshots as e:
        return {"available": False, "message": f"the session {e}", "files": [], "summary": ""}
    except ConfigError as e:
        raise ApiError(400, str(e)) from None
    return {"available": True, **changes.to_dict()}


def _read_and_compute(
    manager: Any, session: Any, store: Any, step: int | None, exclude: Any
) -> dict[str, Any]:
    """A closed session's change set: its notebook read from disk, then compared."""
    return _compute(*_inputs(_notebook(manager, session)), store, step, exclude)


async def change_set(manager: Any, session: Any, notebook: Any, step: int | None) -> dict[str, Any]:
    """The JSON of a change set, computed off the event loop (``offloop``). ``notebook``:
    the live one, or None to read the session's file on disk."""
    store = manager.snapshots.store_for(session.owner)
    exclude = own_paths(manager, session, workdir_of(manager, session))
    if notebook is None:
        return await off_loop(_read_and_compute, manager, session, store, step, exclude)
    meta, steps = _inputs(notebook)
    return await off_loop(_compute, meta, steps, store, step, exclude)


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
        await session.settled()  # a run that just ended: its last snapshot is listed
        live = session.recorder.notebook if session.recorder is not None else None
        answer = await change_set(self.manager, session, live, step)
        self.reply({"session_id": session.id, **answer})


def _revert_and_compare(
    store: Any,
    meta: dict[str, Any],
    workdir: Path,
    path: str,
    force: bool,
    session: Any,
    exclude: Any,
) -> tuple[Any, dict[str, Any], Any]:
    """Put ``path`` back (through the confined workspace), then the new change set twice
    over: as the route's JSON and as the notebook's cell. Runs in a worker."""
    done = revert(store, meta, workdir, path, force=force, session=session.id, exclude=exclude)
    copied = frozen(meta)
    answer = _compute(copied, [], store, None, exclude)
    return done, answer, whole_changes(copied, store, exclude)


class RevertHandler(BaseHandler):
    @authorized
    async def post(self, session_id: str) -> None:
        session = self.session(session_id, change=True)  # 404 before 400
        body = self.json_body(REVERT)
        if session.busy:
            raise ApiError(409, f"session {session_id} is running; wait for it or cancel it first")
        await session.settled()
        manager = self.manager
        recorder = session.recorder
        if recorder is None:  # a closed session read from disk: continue its notebook
            try:
                recorder = await off_loop(manager.signer.reopen, session.path)
            except (UnsignedNotebook, OSError) as e:
                raise ApiError(409, f"session {session_id} cannot be changed: {e}") from None
        workdir = workdir_of(manager, session)
        meta = recorder.notebook.metadata["codeagent"]
        store = manager.snapshots.store_for(session.owner)
        exclude = own_paths(manager, session, workdir)
        lock = session.changes.lock if session.changes is not None else _NO_SINK
        async with lock:
            try:
                done, answer, cell = await off_loop(
                    _revert_and_compare,
                    store,
                    meta,
                    workdir,
                    body["path"],
                    bool(body.get("force")),
                    session,
                    exclude,
                )
            except RevertError as e:
                raise ApiError(e.status, str(e)) from None
            place(recorder.notebook, cell)
            recorder.save()
        self.reply({"reverted": done.to_dict(), "changes": {"session_id": session.id, **answer}})


_NO_SINK = contextlib.nullcontext()
"""A closed session read from disk has no change-set sink whose order to keep."""


def routes() -> list[tuple[str, type]]:
    s = f"/codeagent/api/sessions/{_ID}"
    return [(f"{s}/changes/?", ChangesHandler), (f"{s}/changes/revert", RevertHandler)]
