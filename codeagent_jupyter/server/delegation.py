"""The ``delegate`` tool on the server: helper agents in sandboxes from the server's supply.

Off unless the administrator sets ``c.CodeAgent.delegate_max_per_call``. A helper's sandbox
is started fresh by the supply's backend (``SandboxSupply.get_fresh``: the user's warm
sandbox stays theirs) with the session's limits, never more. Its events go out on the
session's stream under the ``delegate`` call, its cells become a section of the session's
notebook, its own notebook goes next to the session's (``helpers/<session id>/``), and the
session's tool hooks apply to its calls. Cancelling, pausing or closing the session cancels
the call, which shuts every helper's sandbox down before the run ends.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from ..errors import SandboxError
from ..record.helper_notebooks import helper_recorders, helpers_folder, helpers_started
from ..tools import HelperSettings, HelperTool
from .session import AgentSession
from .supply import shutdown_quietly


def helper_tool(
    manager: Any,
    session: AgentSession,
    model: Any,
    *,
    workdir: Path,
    limits: SandboxLimits,
    recorder: Any,
) -> HelperTool | None:
    """The session's ``delegate`` tool when the administrator enabled it, else None."""
    settings = manager.settings
    if settings.delegate_max_per_call <= 0:
        return None

    @contextlib.asynccontextmanager
    async def helper_sandbox(path: Path) -> AsyncIterator[Any]:
        if session.closed:
            raise SandboxError("the session was closed")
        sandbox = await manager.supply.get_fresh(session.owner, path, limits)
        try:
            yield sandbox
        finally:
            await shutdown_quietly(sandbox)

    caps = HelperSettings(
        max_per_call=settings.delegate_max_per_call,
        max_total=settings.delegate_max_total,
        helper_max_steps=settings.delegate_max_steps,
    )
    return HelperTool(
        model,
        workdir,
        helper_sandbox,
        manager.snapshots.store_for(session.owner),
        helper_recorders(helpers_folder(session.path, session.id)),
        caps,
        session=session.id,
        disk_mb=limits.disk_mb,
        earlier=helpers_started(recorder.notebook),
    )
