"""The session cap that never blocks the user: room is made by closing idle sessions.

Each open session holds a sandbox (a kernel and its memory), so ``max_sessions_per_user``
bounds what one user holds. When one more session would go past it, the user's oldest idle
sessions are closed the way the idle reaper closes them: the sandbox is shut down, the
notebook and the workspace snapshots stay, and a message to the session resumes it. Only
when every open session is busy (running, starting, being rebuilt) is the request refused
with 429: then there is nothing to take away without stopping work the user asked for.

Choosing and marking the sessions to close happens without an ``await`` in between, so two
requests arriving together cannot both count the same session as the one to close.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import Any

from .errors import ApiError
from .session import AgentSession

IDLE_TIMEOUT = "idle_timeout"
SESSION_CAP = "session_cap"
PAUSED = "paused"
DELETED = "deleted"
SERVER_STOPPED = "server_stopped"
RESTORE_FAILED = "restore_failed"
CLOSED_REASONS = (
    IDLE_TIMEOUT,
    SESSION_CAP,
    PAUSED,
    DELETED,
    SERVER_STOPPED,
    RESTORE_FAILED,
)
"""Values of ``closed_reason`` in a session's summary (None while it is open)."""


def is_open(session: AgentSession) -> bool:
    """Holding (or about to hold) a sandbox, and not already chosen to be closed."""
    return not session.closed and session.closed_reason is None


def open_sessions(sessions: Iterable[AgentSession], owner: str) -> list[AgentSession]:
    return [s for s in sessions if s.owner == owner and is_open(s)]


def room_for(sessions: Iterable[AgentSession], owner: str, cap: int) -> list[AgentSession]:
    """The sessions of ``owner`` to close so that one more fits under ``cap`` (oldest idle
    first); ``ApiError(429)`` when only busy ones could make room. Changes nothing."""
    held = open_sessions(sessions, owner)
    excess = len(held) - cap + 1
    if excess <= 0:
        return []
    idle = sorted((s for s in held if not s.busy), key=lambda s: s.last_activity)
    if len(idle) < excess:
        raise ApiError(
            429,
            f"all {len(held)} of your open sessions are running (max_sessions_per_user="
            f"{cap}); stop one (POST /sessions/ID/cancel) or wait until one finishes",
        )
    return idle[:excess]


def mark(victims: list[AgentSession]) -> None:
    """Take ``victims`` out of the count now; ``close_all`` releases their sandboxes."""
    for session in victims:
        session.closed_reason = SESSION_CAP


async def close_all(victims: list[AgentSession], log: logging.Logger) -> None:
    for session in victims:
        log.info(
            "codeagent: closing idle session %s of %s to stay within max_sessions_per_user "
            "(a message resumes it)",
            session.id,
            session.owner,
        )
        await session.close(reason=SESSION_CAP)


async def reap(manager: Any) -> None:
    """Housekeeping until the server stops: close sessions idle past ``idle_timeout``
    (resumable, like a session closed for room) and drop expired warm sandboxes."""
    idle_timeout, warm_ttl = manager.settings.idle_timeout, manager.settings.warm_ttl
    interval = max(0.2, min(5.0, warm_ttl / 2, idle_timeout / 2 if idle_timeout > 0 else 5.0))
    while not manager.stopping:
        await asyncio.sleep(interval)
        await manager.supply.expire_warm()
        now = time.monotonic()
        if idle_timeout > 0:
            for session in list(manager.sessions.values()):
                if session.state == "idle" and now - session.last_activity > idle_timeout:
                    manager.log.info("codeagent: closing idle session %s", session.id)
                    await session.close(reason=IDLE_TIMEOUT)
