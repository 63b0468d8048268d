"""The CLI's flags for tools beyond the built-in ones: plugins (``--tool NAME``) and MCP
servers (``--mcp-server [NAME=]CMD|URL``, ``--mcp-approve NAME``), and the toolsets they
make. ``run``, ``resume``, ``replay`` and ``mcp`` take ``--tool``; ``run`` and ``resume``
take the MCP server flags (a replay answers those calls from its recording).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import Any


def add_tools(parser: Any, *, mcp_servers: bool = True) -> None:
    parser.add_argument(
        "--tool",
        action="append",
        default=[],
        metavar="NAME",
        help="offer the model an installed plugin tool (entry-point group "
        "codeagent_jupyter.tools); repeatable",
    )
    if not mcp_servers:
        return
    parser.add_argument(
        "--mcp-server",
        action="append",
        default=[],
        metavar="[NAME=]CMD|URL",
        help="offer the model the tools of an MCP server (a command started over stdio, or a "
        "Streamable HTTP URL) as mcp__NAME__TOOL; they run outside the sandbox and each call "
        "needs approval; repeatable",
    )
    parser.add_argument(
        "--mcp-approve",
        action="append",
        default=[],
        metavar="NAME",
        help="run the calls of MCP server NAME without asking; repeatable",
    )


def plugin_tools(args: argparse.Namespace, sandbox: Any, *, attended: bool = True) -> list[Any]:
    """The ``--tool`` plugins as one toolset on ``sandbox`` (none without the flag);
    ``ConfigError`` for a name that is unknown or clashes with a built-in. ``attended``:
    whether a host tool's call can be asked about (a terminal; never over MCP)."""
    names = list(getattr(args, "tool", None) or [])
    if not names:
        return []
    from ..tools.plugins import PluginToolset, load
    from .tool_ask import tool_approver

    attended = attended and tool_approver() is not None
    return [PluginToolset(load(names), sandbox, attended=attended)]


def check_tool_flags(args: argparse.Namespace) -> None:
    """Bad ``--tool``/``--mcp-*`` flags fail before anything starts (one line, exit 2)."""
    plugin_tools(args, None)
    _specs(args)


def _specs(args: argparse.Namespace) -> list[Any]:
    servers = list(getattr(args, "mcp_server", None) or [])
    approved = list(getattr(args, "mcp_approve", None) or [])
    if not servers and not approved:
        return []
    from ..tools.mcp_tools import parse_specs

    return parse_specs(servers, approved)


def say_unoffered(events: Iterable[Any], offered: set[str]) -> None:
    """One line naming the tools a recorded session called that a replay does not offer
    (a plugin without ``--tool``): their calls will be refused, and the replay differ. The
    names come from the notebook, so only well-formed ones are said, and a few."""
    from .. import events as ev
    from ..tools.mcp_bounds import NAME, PREFIX
    from .output import warn

    called = {e.name for e in events if isinstance(e, ev.ToolCallStarted)}
    missing = sorted(n for n in called - offered if NAME.match(n) and not n.startswith(PREFIX))
    if missing:
        names = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
        warn(
            f"codeagent: the session called {names}, not offered in this replay "
            "(a plugin tool needs --tool NAME)"
        )


@contextlib.asynccontextmanager
async def mcp_tools(args: argparse.Namespace) -> AsyncIterator[list[Any]]:
    """The ``--mcp-server`` servers' tools while the block runs (an empty list without)."""
    specs = _specs(args)
    if not specs:
        yield []
        return
    from ..tools.mcp_tools import McpTools
    from .output import warn
    from .tool_ask import tool_approver

    async with McpTools(specs, attended=tool_approver() is not None) as tools:
        for note in tools.notes:
            warn(f"codeagent: {note}")
        yield [tools]
