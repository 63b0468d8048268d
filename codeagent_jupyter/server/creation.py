"""A new session: the request's checks, its place under the per-user cap, its sandbox,
then its agent in one call of the server's assembly.

The order is the point: everything that can refuse the request (bad text, a step budget
over the administrator's, limits above the ceiling, unknown uploads, a cap with every
session busy) refuses before a sandbox is taken, and from the cap's check to the
registration nothing awaits, so the room made is this session's.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from . import lifecycle
from .assembly import build_session_agent
from .errors import ApiError
from .fetched import keep_bodies
from .mentioning import mentioned, with_mentions
from .policy import check_max_steps, check_text, session_limits
from .session import AgentSession
from .supply import shutdown_quietly


async def create(
    manager: Any,
    owner: str,
    prompt: str,
    *,
    notebook_path: str | None = None,
    model: str | None = None,
    limits: dict[str, Any] | None = None,
    max_steps: int | None = None,
    namespace: list[dict[str, Any]] | None = None,
    uploads: list[str] | None = None,
    kernel_id: str | None = None,
    cells: list[dict[str, Any]] | None = None,
    cells_complete: bool = False,
    title: str = "",
    strict_mentions: bool = True,
) -> AgentSession:
    """Start a session and its first run; returns once the run is under way.

    ``max_steps`` may only lower the administrator's step budget (400 otherwise).
    ``namespace`` describes the user's kernel variables for the model (no values);
    ``uploads`` are ids from ``POST /uploads``, loaded into the sandbox before step 1.
    ``kernel_id`` (the user's kernel) names the notebook through jupyter_server's
    sessions, over ``notebook_path``; ``cells`` are the live notebook's (``livecells``).
    ``title`` is how the request reads to people (``RunStarted.title``). An @-mention
    that names nothing is a 400 unless not ``strict_mentions`` (a chat's persons).
    """
    from ..core.context import build_context
    from ..core.instructions import read_instructions, with_class_instructions
    from ..record.recorder import NotebookRecorder
    from ..tools.edit_cell import cells_of, labels_of

    check_text(prompt, manager.settings.max_prompt_chars, "the prompt")
    check_max_steps(max_steps, manager.settings.max_steps)
    chosen_limits = session_limits(manager.default_limits, limits)
    chosen = manager.models.model_for(model)
    notebook_path = await manager.resolver.path_of_kernel(kernel_id) or notebook_path
    workdir = manager.resolver.workdir_for(notebook_path)
    notebook = await manager.resolver.notebook(notebook_path, cells, cells_complete)
    # Read before this session's sandbox exists, off the event loop (confined, bounded).
    root = manager.resolver.root_dir  # the root's files, then the notebook folder's
    applied, instructions = await asyncio.to_thread(read_instructions, root, workdir)
    if manager.class_instructions is not None:  # the class's, before the project's
        given = await asyncio.to_thread(manager.class_instructions)
        applied, instructions = with_class_instructions(given, applied, instructions)
    variables = manager.uploads.names(owner, uploads or [])
    section = await mentioned(prompt, workdir, notebook, variables, strict=strict_mentions)
    # From here to the registration nothing awaits: the room made is this session's.
    victims = manager.room_for(owner)  # 429 when every open session is busy
    # 404 (or 413 over the disk budget) before any sandbox
    chosen_uploads = manager.uploads.take(owner, uploads or [], chosen_limits.disk_mb)
    lifecycle.mark(victims)

    session_id = uuid.uuid4().hex[:12]
    path = manager.sessions_dir / f"{session_id}.ipynb"
    session = AgentSession(
        session_id, owner=owner, path=path, notebook_path=notebook_path, model=chosen.name
    )
    session.kernel_id = kernel_id
    session.variables = variables
    manager.sessions[session_id] = session  # counts against the cap while the kernel starts
    await manager.make_room(victims)
    try:
        sandbox = await manager.supply.get(owner, workdir, chosen_limits)
    except BaseException:
        del manager.sessions[session_id]
        raise
    if session.closed:  # deleted or shut down while the kernel was starting
        await shutdown_quietly(sandbox)
        raise ApiError(409, f"session {session_id} was closed while starting")
    try:
        loaded = await manager.uploads.load(chosen_uploads, sandbox)
        recorder = NotebookRecorder(path, session_id=session_id, on_saved=manager.signer.saved)
        session.bus.subscribe(recorder.emit)
        network = getattr(sandbox, "network_log", None)
        if network is not None:  # --network policy: the broker's records, from now on
            network.attach(session.bus)
        session.network.attach(getattr(sandbox, "egress", None))  # default: ask asks the owner
        keep_bodies(manager.fetched, owner, sandbox)
        context = build_context(
            workdir,
            notebook,
            namespace=namespace,
            loaded=loaded,
            preloaded=getattr(sandbox, "preloaded", None),
        )
        loop = build_session_agent(
            manager,
            session,
            chosen,
            sandbox,
            recorder,
            workdir=workdir,
            limits=chosen_limits,
            max_steps=max_steps,
            context=context,
            notebook_cells=cells_of(notebook),
            cell_labels=labels_of(notebook),
            instructions=instructions,
            instruction_files=applied,
        )
    except BaseException:
        del manager.sessions[session_id]
        await shutdown_quietly(sandbox)
        raise
    session.attach(loop, sandbox, recorder)
    shown = title or (prompt if section else "")  # people read the request, not the files
    session.start_run(with_mentions(prompt, section), " ".join(shown.split()))
    return session
