"""MCP servers as tool sources: their tools offered to the model as ``mcp__<server>__<tool>``.

The administrator names the servers (``codeagent run --mcp-server [NAME=]CMD|URL``,
``c.CodeAgent.mcp_servers``); each is started (a command, over stdio, with the SDK's minimal
environment: none of our keys) or reached (a URL, Streamable HTTP) with the official ``mcp``
SDK's client. Their tools run *outside* the sandbox, so each call is asked for approval
unless the server is approved by name (``--mcp-approve NAME``); the runner records every
call like ours (arguments, result, duration), and ``RecordedMcpTools`` answers a replay from
that recording without starting any server. What a server says is bounded (``mcp_bounds``).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import shlex
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.outcome import ToolOutcome
from ..core.toolset import ToolContext
from ..errors import ConfigError, ToolArgumentError
from ..util.visible import visible
from . import mcp_bounds as bounds

CALL_TIMEOUT_S = 120.0
"""Seconds one call (and the start of a server) may take."""
UNATTENDED = (
    "Denied: this tool runs outside the sandbox and needs the user's approval, and there is "
    "no one to ask here; the administrator can approve the server with --mcp-approve {server}."
)


@dataclass(frozen=True)
class McpServerSpec:
    """One MCP server to use: its short name, and the command line or URL reaching it."""

    name: str
    target: str
    approved: bool = False

    @property
    def is_url(self) -> bool:
        return self.target.startswith(("http://", "https://"))


def parse_spec(text: str, approved: Iterable[str] = ()) -> McpServerSpec:
    """``[NAME=]CMD|URL``; the name defaults to the URL's host or the command's file name."""
    name, eq, rest = text.partition("=")
    if eq and bounds.SERVER_NAME.match(name) and " " not in name:
        target = rest.strip()
    else:
        name, target = "", text.strip()
    if not target:
        raise ConfigError(f"--mcp-server {text!r}: no command or URL")
    if not name:
        if target.startswith(("http://", "https://")):
            host = target.split("://", 1)[1].split("/", 1)[0].split(":", 1)[0]
            name = host.replace(".", "_")
        else:
            words = _split(target)
            name = words[0].rsplit("/", 1)[-1] if words else ""
        name = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)[:24]
    if not bounds.SERVER_NAME.match(name):
        raise ConfigError(f"--mcp-server {text!r}: name it NAME=... ([A-Za-z0-9_-], <= 24)")
    return McpServerSpec(name, target, approved=name in set(approved))


def parse_specs(texts: Sequence[str], approved: Sequence[str] = ()) -> list[McpServerSpec]:
    """Every server, names unique; ``approved`` must name servers among them."""
    specs = [parse_spec(t, approved) for t in texts]
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"MCP server name {twice[0]!r} is used twice; name them NAME=...")
    unknown = sorted(set(approved) - set(names))
    if unknown:
        raise ConfigError(f"--mcp-approve {unknown[0]!r}: no --mcp-server of that name")
    return specs


def _split(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError as exc:
        raise ConfigError(f"--mcp-server {command!r}: {exc}") from None


@dataclass
class _Remote:
    spec: McpServerSpec
    client: Any
    tool: str
    """The tool's name on its server."""


class McpTools:
    """The tools of some MCP servers (a ``Toolset``); ``async with`` starts and stops them.

    ``attended``: whether a call under approval can be asked about (the server's panel, a
    terminal); unattended, a call of a server not approved is denied with the reason.
    ``notes`` says what was left out of a server's listing, for the edge to print.
    """

    def __init__(self, specs: Sequence[McpServerSpec], *, attended: bool = False) -> None:
        self.specs = list(specs)
        self.attended = attended
        self.notes: list[str] = []
        self._remote: dict[str, _Remote] = {}
        self._schemas: list[dict[str, Any]] = []
        self._stack = contextlib.AsyncExitStack()

    async def __aenter__(self) -> McpTools:
        try:
            for spec in self.specs:
                client = await self._connect(spec)
                await self._list(spec, client)
        except BaseException:
            await self._stack.aclose()
            raise
        return self

    async def __aexit__(self, *exc: Any) -> None:
        with contextlib.suppress(Exception):
            await self._stack.aclose()

    async def _connect(self, spec: McpServerSpec) -> Any:
        try:
            from mcp import Client, StdioServerParameters
            from mcp.client.stdio import stdio_client
        except ImportError:
            raise ConfigError(
                "--mcp-server needs the MCP SDK: pip install 'codeagent-jupyter[mcp]'"
            ) from None
        if spec.is_url:
            target: Any = spec.target
        else:
            words = _split(spec.target)
            params = StdioServerParameters(command=words[0], args=words[1:])
            # Its stderr is not ours to print: a terminal would obey its escapes.
            quiet = self._stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115
            target = stdio_client(params, errlog=quiet)
        client = Client(target, read_timeout_seconds=CALL_TIMEOUT_S)
        try:
            return await self._stack.enter_async_context(client)
        except Exception as exc:
            raise ConfigError(
                f"MCP server {spec.name!r} could not be started: {_one(exc)}"
            ) from None

    async def _list(self, spec: McpServerSpec, client: Any) -> None:
        try:
            listing = await client.list_tools()
        except Exception as exc:
            raise ConfigError(
                f"MCP server {spec.name!r} did not list its tools: {_one(exc)}"
            ) from None
        tools = list(listing.tools or [])
        left = 0
        for tool in tools[: bounds.MAX_TOOLS]:
            raw = str(getattr(tool, "name", ""))
            name = bounds.tool_name(spec.name, raw)
            params = bounds.parameters(getattr(tool, "input_schema", None))
            if name is None or params is None or name in self._remote:
                left += 1
                continue
            self._remote[name] = _Remote(spec, client, raw)
            function = {
                "name": name,
                "description": bounds.description(getattr(tool, "description", ""), spec.name),
                "parameters": params,
            }
            self._schemas.append({"type": "function", "function": function})
        left += max(0, len(tools) - bounds.MAX_TOOLS)
        if left:
            self.notes.append(
                f"MCP server {spec.name!r}: {left} tool(s) left out (bad name or schema, "
                f"or over {bounds.MAX_TOOLS})"
            )

    @property
    def names(self) -> set[str]:
        return set(self._remote)

    def schemas(self) -> list[dict[str, Any]]:
        return copy.deepcopy(self._schemas)

    async def call(
        self, name: str, arguments: dict[str, Any], ctx: ToolContext | None = None
    ) -> ToolOutcome:
        remote = self._remote.get(name)
        if remote is None:
            raise ToolArgumentError(f"unknown tool {name!r}; available: {', '.join(self._remote)}")
        if not isinstance(arguments, dict):
            raise ToolArgumentError(f"{name}: arguments must be a JSON object")
        ctx = ctx or ToolContext()
        if not remote.spec.approved:
            approve = ctx.approve if self.attended else None
            if approve is None:
                if ctx.approve is not None:  # recorded as asked and denied
                    await ctx.approve(name, arguments)
                return ToolOutcome("denied", UNATTENDED.format(server=remote.spec.name))
            if not await approve(name, arguments):
                return ToolOutcome.denied()
        started = time.perf_counter()
        try:
            result = await remote.client.call_tool(remote.tool, arguments)
        except Exception as exc:
            return ToolOutcome.failed(
                f"Error: MCP server {remote.spec.name!r} failed the call: {_one(exc)}"
            )
        limit = ctx.config.result_chars
        text = bounds.result_text(
            remote.spec.name, result.content, getattr(result, "structured_content", None), limit
        )
        status = "error" if getattr(result, "is_error", False) else "ok"
        return ToolOutcome(status, text, duration_s=time.perf_counter() - started)


def _one(exc: BaseException) -> str:
    """One line for an error, the first of a group's (anyio raises groups)."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    text = " ".join(str(exc).split()) or type(exc).__name__
    return visible(text)[:300]


class HeldMcpTools:
    """``McpTools`` opened and closed by a task of its own, so that any task may ``close`` it
    (the SDK's connections must be left in the task that opened them): a server session's
    MCP servers, started with the session and stopped when it closes."""

    def __init__(self, specs: Sequence[McpServerSpec], *, attended: bool = True) -> None:
        self.tools = McpTools(specs, attended=attended)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> McpTools:
        """Start every server; raises (``ConfigError``) when one cannot be used."""
        opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def hold() -> None:
            try:
                async with self.tools:
                    opened.set_result(None)
                    await self._stop.wait()
            except BaseException as exc:
                if not opened.done():
                    opened.set_exception(exc)
                    return  # said by ``start``
                raise

        self._task = asyncio.ensure_future(hold())
        await opened
        return self.tools

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await self._task
