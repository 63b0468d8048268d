"""The sandbox's tools in ``jupyter-server-mcp``'s tool registry (Jupyter AI's MCP server).

``jupyter-server-mcp`` loads the entry point ``jupyter_server_mcp.tools`` → ``tools()``: a
list of ``module:function`` specs, here one per sandbox tool. Each function is made from
the tool's own schema (its signature and docstring are what the registry shows an agent)
and calls the tool in a sandbox of the server extension's MCP hub, recorded and culled like
the sessions of ``/codeagent/mcp``. The entry point is only ever loaded by
``jupyter-server-mcp``, so nothing here is imported unless that package is installed.

The registry's MCP server runs on its own port without the Jupyter server's auth (it only
accepts loopback hosts and origins), so its calls count as the server owner's, in one
sandbox (a registered function is not told which MCP session calls it): the chat's agents
share its state, as they share the user's kernel without it.
"""

from __future__ import annotations

import inspect
from typing import Any

from .results import content, is_error, offered

OWNER = "server-owner"
"""Whose sandboxes the registry's calls use: the owner of a single-user server."""
CLIENT = "jupyter-server-mcp"
KEY = "registry:jupyter-server-mcp"
"""The registry's sandbox: one for its server (a plain tool function is not told which of
the server's MCP sessions calls it); a new one after an idle cull."""
WHERE = "It runs in a codeagent sandbox (its own kernel and workspace), not the user's kernel."
"""Said under each tool's description: Jupyter AI's own tools work in the user's notebook."""
_HUB: Any = None
_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool}


def attach(hub: Any) -> None:
    """Called by the server extension: the hub whose sandboxes the registry's tools use."""
    global _HUB
    _HUB = hub


def _schemas() -> list[dict[str, Any]]:
    from pathlib import Path

    from ..core.toolset import combine
    from .session import sandbox_tools

    return offered(combine(sandbox_tools(None, Path.cwd())))


def tools() -> list[str]:
    """The entry point: ``module:function`` of every sandbox tool."""
    return [f"{__name__}:{s['function']['name']}" for s in _schemas()]


def __getattr__(name: str) -> Any:
    for schema in _schemas():
        if schema["function"]["name"] == name:
            return _function(schema["function"])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _function(spec: dict[str, Any]) -> Any:
    """An async function with the tool's name, parameters and description."""
    name = spec["name"]
    params = spec["parameters"]
    required = set(params.get("required", []))
    signature = []
    keyword = inspect.Parameter.KEYWORD_ONLY
    for arg, prop in params.get("properties", {}).items():
        kind = _TYPES.get(prop.get("type"), str)
        if arg in required:
            signature.append(inspect.Parameter(arg, keyword, annotation=kind))
        else:
            default = prop.get("default")
            annotation = kind if default is not None else kind | None
            param = inspect.Parameter(arg, keyword, default=default, annotation=annotation)
            signature.append(param)

    async def tool(**arguments: Any) -> Any:
        sent = {k: v for k, v in arguments.items() if v is not None}
        return await call(name, sent)

    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = f"{spec['description']}\n\n{WHERE}"
    tool.__signature__ = inspect.Signature(signature)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in signature}
    return tool


class SandboxToolError(Exception):
    """A call that failed, where the registry's server is not FastMCP: it makes the
    exception an error result with this text."""


def _tool_error(text: str) -> Exception:
    """What a failed call raises: FastMCP's ``ToolError`` where FastMCP serves the registry
    (``jupyter-server-mcp`` runs on it), whose text reaches the agent as it is (even where
    the server masks other errors' details) and is logged without a traceback."""
    try:
        from fastmcp.exceptions import ToolError
    except ImportError:
        return SandboxToolError(text)
    return ToolError(text)


async def call(name: str, arguments: dict[str, Any]) -> Any:
    """Run sandbox tool ``name``: its text and images, or a tool error with its text."""
    if _HUB is None:
        raise RuntimeError("the codeagent server extension is not running in this server")
    session = await _HUB.tools_for((OWNER, KEY), CLIENT)
    outcome = await session.call(name, arguments, CLIENT)
    if is_error(outcome.status):
        raise _tool_error(outcome.text)
    return content(outcome.text, outcome.outputs)  # in the SDK the registry's server runs on
