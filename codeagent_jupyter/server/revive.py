"""Bring a closed session back: resume it, fork it from a step, or pause it.

A session closed by the idle reaper, by ``pause``, or cut off by a server restart
(``interrupted``) is still its signed notebook plus the workspace snapshots the notebook
lists. ``revive`` starts a new sandbox for it, restores the snapshot of the last (or the
N-th) step, re-runs its successful cells, hands the model the conversation so far and starts
the new run. A resume continues the same session (same id, same notebook, event numbering
carried on); a fork is a new session whose notebook names its parent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from .. import events as ev
from ..core.context import loaded_context
from ..errors import ConfigError
from ..record.packages import reinstall
from ..record.reader import parse_session
from ..record.restore import Rebuilt, rebuild
from ..record.resume import ResumePlan, plan
from . import lifecycle, mcp_sources
from .assembly import build_session_agent, install_tool, store_of
from .bodies import body_schema
from .errors import ApiError
from .fetched import keep_bodies, play_recording
from .policy import check_text
from .session import AgentSession
from .store import read_regular
from .supply import shutdown_quietly

log = logging.getLogger(__name__)

PAUSED_REASON = "paused by the user"
FORK = body_schema({"prompt": "string"}, {"step": "integer"})
"""The body of ``POST …/fork``: the new request, and the step to fork after (default: end)."""


def _plan(manager: Any, session: AgentSession, step: int | None) -> ResumePlan:
    """The plan from the session's notebook, only if it is what this server signed: the
    very text that was checked is planned from, never a second read of the file."""
    try:
        text = read_regular(session.path)
    except (OSError, UnicodeDecodeError):
        raise ApiError(409, f"session {session.id} has no notebook to resume from") from None
    refused = manager.signer.verify(session.path, text)
    if refused is not None:
        raise ApiError(409, f"session {session.id} cannot be resumed: {refused}")
    try:
        return plan(session.path, step, notebook=parse_session(text, session.path))
    except ConfigError as e:
        raise ApiError(400 if step is not None else 409, str(e)) from None


async def revive(
    manager: Any,
    parent: AgentSession,
    prompt: str,
    *,
    step: int | None = None,
    fork: bool = False,
    uploads: list[str] | None = None,
) -> AgentSession:
    """Resume ``parent`` (or fork it after ``step``) and start the run of ``prompt``, the
    variables ``uploads`` (upload ids) loaded first.

    What can be refused is checked here and answers the request (notebook, signature, quota,
    a sandbox); re-running the cells and the run itself go on in the background
    (``session.restoring``), so a session whose cells take minutes is answered at once and
    says ``restored from step N …`` on its event stream when it is back.
    """
    check_text(prompt, manager.settings.max_prompt_chars, "the message")
    if parent.running or (not fork and not parent.closed):
        raise ApiError(409, f"session {parent.id} is not closed; send it a message instead")
    todo = _plan(manager, parent, step)
    workdir = manager.resolver.workdir_for(parent.notebook_path)  # never the recorded one
    # Today's c.CodeAgent.limits, lowered where the session ran under less (its request's
    # own tightening); a recorded value above today's ceiling is simply not taken.
    limits = manager.default_limits.tightened_by(todo.limits)
    try:
        model = manager.models.model_for(parent.model or None)
    except ApiError:
        model = manager.models.model_for(None)
    victims = manager.room_for(parent.owner)  # 429 only when every open one is busy
    # 404 or 413 before anything starts; from here they are this revival's to load or drop
    chosen = manager.uploads.take(parent.owner, uploads or [], limits.disk_mb)
    lifecycle.mark(victims)
    if fork:
        new_id = uuid.uuid4().hex[:12]
        session = AgentSession(
            new_id,
            owner=parent.owner,
            path=manager.sessions_dir / f"{new_id}.ipynb",
            notebook_path=parent.notebook_path,
            model=model.name,
        )
        session.source = parent.id
        manager.sessions[new_id] = session
    else:
        session = parent
        session.closed = False  # counted as open again while it starts
        session.closed_reason = None
        session.loop = None  # "starting": the idle reaper leaves it alone meanwhile
        session.touch()
    await manager.make_room(victims)
    try:
        sandbox = await manager.supply.get(parent.owner, workdir, limits)
    except BaseException:
        _undo(manager, session, fork)
        manager.uploads.discard(chosen)
        raise
    revival = _Revival(manager, parent, session, todo, sandbox, model, workdir, limits, fork)
    revival.uploads = chosen
    session.restoring = asyncio.ensure_future(_restore(revival, prompt))
    return session


@dataclass
class _Revival:
    """What ``revive`` checked and started, for the background part."""

    manager: Any
    parent: AgentSession
    session: AgentSession
    todo: ResumePlan
    sandbox: Any
    model: Any
    workdir: Any
    limits: Any
    fork: bool
    uploads: list[Any] = field(default_factory=list)
    """Variables to load once the cells ran again (``UploadStore.take``'s)."""


async def _restore(r: _Revival, prompt: str) -> None:
    """Rebuild the kernel state and the loop, then start the run; a failure ends the
    session's stream with an ``error`` run and leaves it closed (resumable again)."""
    session = r.session
    try:
        rebuilt, loop, recorder = await _rebuild(r)
        # After the cells (what they defined must not overwrite the user's copy), before
        # the session is live (no other message may start a run meanwhile).
        names = [u.name for u in r.uploads]
        loaded = await r.manager.uploads.load(r.uploads, r.sandbox)
        r.uploads = []  # loaded (or dropped with a line saying why): nothing left to discard
        if session.closed:  # deleted (or the server stopping) while it was rebuilt
            raise asyncio.CancelledError
    except BaseException as exc:
        r.manager.uploads.discard(r.uploads)
        await shutdown_quietly(r.sandbox)
        await mcp_sources.close_for(session)
        if isinstance(exc, Exception) and not session.closed:
            log.warning("session %s could not be restored: %s", session.id, exc)
            why = exc.message if isinstance(exc, ApiError) else f"{type(exc).__name__}: {exc}"
            reason = f"the session could not be restored: {why}"
            session.bus.publish(ev.RunFinished, status=ev.ERROR, reason=reason)
            session.closed_reason = lifecycle.RESTORE_FAILED
        session.closed = True
        session.bus.close()
        if not isinstance(exc, Exception | asyncio.CancelledError):
            raise
        return
    finally:
        session.restoring = None
    session.bus.closed = False
    session.paused = False
    session.restored = rebuilt.to_dict() | {"summary": rebuilt.summary}
    session.attach(loop, r.sandbox, recorder)
    network = getattr(r.sandbox, "network_log", None)
    if network is not None:  # the rebuild's requests (from the recording), then live ones
        network.attach(session.bus)
    session.network.attach(getattr(r.sandbox, "egress", None))  # default: ask asks the owner
    session.bus.publish(ev.SessionRestored, **rebuilt.event_fields())
    if loaded:
        session.variables = list(dict.fromkeys([*session.variables, *names]))
        prompt = f"{prompt}\n\n{loaded_context(loaded)}"
    session.start_run(prompt)


async def _rebuild(r: _Revival) -> tuple[Rebuilt, Any, Any]:
    """Re-run the cells in the new sandbox; the notebook recorder and the loop to go on with."""
    from ..core.instructions import recorded_instruction_files, recorded_instructions
    from ..record.recorder import NotebookRecorder

    manager, parent, session, todo, workdir = r.manager, r.parent, r.session, r.todo, r.workdir
    install = await reinstall(install_tool(manager, r.sandbox), todo)
    keep_bodies(manager.fetched, parent.owner, r.sandbox)
    recording = play_recording(manager.fetched, parent.owner, r.sandbox, todo.notebook)
    try:
        rebuilt = await rebuild(todo, r.sandbox, store_of(manager, parent.owner))
    finally:
        if recording is not None:
            recording.stop()  # the cells ran again from the recording; the run is live
    if r.fork:
        recorder = NotebookRecorder(
            session.path, session_id=session.id, on_saved=manager.signer.saved
        )
        recorder.notebook.metadata["codeagent"]["parent"] = {
            "session_id": parent.id,
            "run": todo.run,
            "step": todo.step,
        }
        session.bus.subscribe(recorder.emit)
    elif parent.recorder is not None:
        recorder = parent.recorder
    else:
        recorder = manager.signer.reopen(parent.path)
        session.bus.subscribe(recorder.emit)
    meta = recorder.notebook.metadata["codeagent"]
    meta.setdefault("restores", []).append(rebuilt.to_dict())
    await mcp_sources.open_for(manager, session)
    loop = build_session_agent(
        manager,
        session,
        r.model,
        r.sandbox,
        recorder,
        workdir=workdir,
        limits=r.limits,
        history=[*todo.messages, {"role": "user", "content": rebuilt.note_for_model()}],
        run_index=len(meta.get("runs", [])),
        install=install,
        instructions=recorded_instructions(todo.notebook),  # never the workspace's now
        instruction_files=recorded_instruction_files(todo.notebook),
    )
    return rebuilt, loop, recorder


def _undo(manager: Any, session: AgentSession, fork: bool) -> None:
    if fork:
        manager.sessions.pop(session.id, None)
    else:
        session.closed = True
        session.closed_reason = session.closed_reason or lifecycle.RESTORE_FAILED


async def pause(session: AgentSession, *, wait_s: float) -> None:
    """Stop after the tool call in flight (a model request is dropped), then close.

    The run ends ``cancelled`` with the reason ``paused by the user``; the workspace was
    snapshotted after the last step that ran code, and the sandbox is shut down. A message
    to the session resumes it.
    """
    session.paused = True
    if session.running and session.loop is not None:
        loop = session.loop
        if not _in_tool_call(session):
            loop.cancel(PAUSED_REASON)
        else:

            def after_call(event: Any) -> None:
                if event.type == "tool_call_finished":
                    loop.cancel(PAUSED_REASON)
                    session.bus.unsubscribe(after_call)

            session.bus.subscribe(after_call)
        if session.task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(session.task), wait_s)
    await session.close(reason=lifecycle.PAUSED)


def _in_tool_call(session: AgentSession) -> bool:
    started, finished = set(), set()
    for event in reversed(session.bus.events):
        if event.type == "run_started":
            break
        if event.type == "tool_call_started":
            started.add(event.tool_call_id)
        elif event.type == "tool_call_finished":
            finished.add(event.tool_call_id)
    return bool(started - finished)
