"""A server session's MCP servers (``c.CodeAgent.mcp_servers``): started with the session's
agent, offered as its ``mcp__`` tools, asked about through the session's approvals (the
panel's card), stopped when the session closes.

Each session starts its own: a server's state (a scratch memory, a browser) is never shared
between users or sessions.
"""

from __future__ import annotations

from typing import Any

from ..errors import ConfigError
from .errors import ApiError


async def open_for(manager: Any, session: Any) -> None:
    """Start the administrator's MCP servers for ``session`` (``session.mcp_sources``),
    once; 503 with the reason when one cannot be started."""
    if getattr(session, "mcp_sources", None) is not None:
        return
    try:
        specs = manager.settings.mcp_specs()
    except ConfigError as e:
        raise ApiError(503, f"the MCP servers are misconfigured: {e}") from None
    if not specs:
        return
    from ..tools.mcp_tools import HeldMcpTools

    held = HeldMcpTools(specs, attended=True)
    try:
        await held.start()
    except ConfigError as e:
        await held.close()
        raise ApiError(503, str(e)) from None
    for note in held.tools.notes:
        manager.log.warning("session %s: %s", session.id, note)
    session.mcp_sources = held


def toolsets(session: Any) -> list[Any]:
    """The session's MCP tools, as toolsets of its agent (none without servers)."""
    held = getattr(session, "mcp_sources", None)
    return [held.tools] if held is not None else []


async def close_for(session: Any) -> None:
    held, session.mcp_sources = getattr(session, "mcp_sources", None), None
    if held is not None:
        await held.close()
