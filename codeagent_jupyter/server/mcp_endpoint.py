"""``/codeagent/mcp``'s MCP side: the SDK's server and streamable-HTTP session manager over
the hub's sandboxes.

Built only where an ``mcp`` SDK that can serve it is installed; the hub (``mcp_sessions.py``)
is there either way, so Jupyter AI's tool registry has its sandboxes beside any SDK. The SDK
itself (with pydantic's models and the ASGI stack under it, about 35 MB of the server's
memory) is imported at the endpoint's first request, not at the server's start: a server
whose users never connect an MCP client does not carry it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from ..mcp.server import SessionRefused, build_server, client_info
from ..mcp.session import ToolSession, client_label
from .mcp_sessions import McpHub, first_known

OWNER_KEY = "codeagent.owner"
"""Where the HTTP handler puts the request's owner in the ASGI scope."""
SESSION_HEADER = "mcp-session-id"
JSON_REPLIES = True
"""A POST is answered with one JSON body (``Content-Length``), not an SSE stream: our tools
send the client nothing before their result, and a client stops reading an SSE reply at its
result, before the stream's end, which leaves the connection unusable (the SDK's client then
opens a new TCP connection for every call). A JSON reply is read to its end, so the client
keeps its connection alive. The GET stream (server-initiated messages) stays SSE."""


class McpEndpoint:
    """The SDK's streamable-HTTP session manager, serving the hub's tool sessions."""

    def __init__(self, hub: McpHub, *, idle_timeout: float | None = None) -> None:
        self.hub = hub
        self.idle_timeout = idle_timeout if idle_timeout and idle_timeout > 0 else None
        self.server: Any = None
        self.http: Any = None
        self.instructions = ""
        """What ``initialize`` says: the isolation in force (set by ``state_isolation``)."""
        self._summary = ""
        self._running: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop: asyncio.Event | None = None
        hub.terminate = self.terminate

    async def terminate(self, session_id: str) -> None:
        """End the SDK's transport of ``session_id`` (its id answers 404 from now on): an
        MCP session closed before its first tool call holds nothing else."""
        instances = getattr(self.http, "_server_instances", None) or {}
        transport = instances.get(session_id)
        if transport is not None and not transport.is_terminated:
            await transport.terminate()

    async def start(self) -> None:
        """Run the SDK's session manager (once, from the first request on) for as long as
        the server runs."""
        if self.http is None:
            from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

            self.server = build_server(
                self.session_for, self.hub.schemas, instructions_text=self.instructions
            )
            self.http = StreamableHTTPSessionManager(
                app=self.server, session_idle_timeout=self.idle_timeout, json_response=JSON_REPLIES
            )
        if self._running is None:
            self._stop = asyncio.Event()
            self._running = asyncio.ensure_future(self._run())
        await self._ready.wait()

    async def _run(self) -> None:
        assert self._stop is not None
        async with self.http.run():
            self._ready.set()
            await self._stop.wait()

    async def stop(self) -> None:
        if self._running is not None and self._stop is not None:
            self._stop.set()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._running, 10)

    async def state_isolation(self) -> str:
        """The ``initialize`` instructions (and the line logged once): the isolation the
        pool's sandboxes report."""
        summary, text = await self.hub.isolation()
        if self.instructions != text:
            if first_known(self._summary, summary):
                self.hub.manager.log.info("codeagent: MCP at /codeagent/mcp: %s", summary)
            self.instructions, self._summary = text, summary
            if self.server is not None:
                self.server.instructions = text
        return text

    def key_of(self, ctx: Any) -> tuple[str, str]:
        """``(owner, MCP session id)`` of a request; on the sessionless protocol, the
        client's name stands in for the session."""
        request = getattr(ctx, "request", None)
        scope = getattr(request, "scope", None) or {}
        owner = scope.get(OWNER_KEY)
        if not owner:
            raise SessionRefused("this request did not come through the server's MCP endpoint")
        headers = getattr(request, "headers", None) or {}
        session_id = headers.get(SESSION_HEADER)
        if session_id:
            return owner, session_id
        return owner, "client:" + client_label(client_info(ctx))

    async def session_for(self, ctx: Any) -> ToolSession:
        """The tool session of an HTTP request (its sandbox started on its first call)."""
        return await self.hub.tools_for(self.key_of(ctx), client_label(client_info(ctx)))
