"""The MCP server: the official SDK's low-level ``Server``, answering ``tools/list`` and
``tools/call`` from tool sessions.

The same server serves both transports: over stdio there is one tool session for the
process; over streamable HTTP the server extension finds (or makes) the session of each
request's MCP session. Its ``initialize`` instructions state the isolation in force, as
the first line of the CLI does.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from .results import call_result, error_result, mcp_tools
from .session import ToolSession, client_label

log = logging.getLogger(__name__)

SERVER_NAME = "codeagent-sandbox"
SessionFor = Callable[[Any], Awaitable[ToolSession]]
"""``(request context) -> the tool session the request belongs to``; raises
``SessionRefused`` when there is none to be had."""


class SessionRefused(Exception):
    """No tool session for this request (a cap, a closed session, a sandbox that cannot
    start): the message is what the client's agent is told."""


def _version() -> str:
    """This package's version (read from its metadata: the package root imports the
    server extension, which imports this module)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("codeagent-jupyter")
    except PackageNotFoundError:
        return "0"


def instructions(summary: str, warning: str | None = None) -> str:
    """What an MCP client is told at ``initialize``: where its code runs, and under what."""
    text = (
        f"These tools run in a codeagent sandbox. {summary}.\n"
        "run_cell runs Python in a persistent IPython kernel (variables, imports and files "
        "persist between calls); run_command runs a shell command there; the file tools "
        "work only inside the sandbox's workspace. The sandbox has no network unless its "
        "administrator allowed it, and none of the user's secrets. Results are bounded; "
        "plots come back as images. Every call is recorded in a session notebook."
    )
    return f"{text}\nWARNING: {warning}" if warning else text


def client_info(ctx: Any) -> Any:
    """The calling client's ``Implementation`` (``initialize``'s ``clientInfo``, or the
    2026-era request envelope's), or None."""
    params = getattr(getattr(ctx, "session", None), "client_params", None)
    return getattr(params, "client_info", None)


def build_server(
    session_for: SessionFor,
    schemas: list[dict[str, Any]],
    *,
    instructions_text: str,
) -> Any:
    """An SDK ``Server`` offering ``schemas`` (OpenAI form, as our tools declare them)."""
    import mcp.types as types
    from mcp.server import Server

    tools = mcp_tools(schemas)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: Any) -> Any:
        try:
            session = await session_for(ctx)
        except SessionRefused as exc:
            return error_result(f"Error: {exc}")
        outcome = await session.call(
            params.name, dict(params.arguments or {}), client_label(client_info(ctx))
        )
        return call_result(outcome)

    return Server(
        SERVER_NAME,
        version=_version(),
        title="codeagent sandbox",
        instructions=instructions_text,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
