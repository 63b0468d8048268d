"""``/codeagent/mcp``: the MCP SDK's streamable-HTTP transport behind the server's auth.

The SDK's ``StreamableHTTPSessionManager`` is an ASGI application (session ids, SSE
streams, protocol-version and header checks, resumption): this handler authenticates and
authorizes the request as every handler of ours does, then hands it to that application
through a small ASGI bridge (one scope, the body as one ``http.request``, each ``send``
written and flushed, so SSE streams as it is produced). Hand-writing the bridge (about
sixty lines) is less than re-implementing any part of the transport, and tornado has no
maintained ASGI container of its own.

The request's owner goes into the scope twice: as the SDK's authenticated principal (the
SDK then answers another owner's session id exactly like an unknown one, 404) and under
``codeagent.owner`` for the hub, which gives each MCP session its sandbox.
"""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado.iostream import StreamClosedError

from .errors import ApiError
from .handlers import BaseHandler
from .mcp_endpoint import OWNER_KEY, SESSION_HEADER

MCP_PATH = "/codeagent/mcp"


@functools.lru_cache(maxsize=1024)
def _principal(owner: str) -> Any:
    """The SDK's authenticated user for ``owner`` (no token in it: ownership only); made
    once per owner (two pydantic models on every request otherwise)."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    return AuthenticatedUser(AccessToken(token="", client_id=owner, scopes=[], subject=owner))


class McpHandler(BaseHandler):
    """POST (messages), GET (the server's SSE stream) and DELETE (end the session)."""

    def initialize(self) -> None:
        self._gone = asyncio.Event()
        self._content_type = "application/json"
        self._opened: str | None = None
        """The session id the SDK gave a new MCP session (its ``initialize``' answer)."""

    @property
    def hub(self) -> Any:
        return self.settings["codeagent_mcp"]

    @property
    def endpoint(self) -> Any:
        return self.settings["codeagent_mcp_endpoint"]

    def on_connection_close(self) -> None:
        self._gone.set()

    @authorized
    async def post(self) -> None:
        await self._serve()

    @authorized
    async def get(self) -> None:
        await self._serve()

    @authorized
    async def delete(self) -> None:
        await self._serve()
        session_id = self.request.headers.get(SESSION_HEADER)
        if session_id and self.get_status() < 400:
            await self.hub.end(self.owner, session_id)

    async def _serve(self) -> None:
        endpoint, owner = self.endpoint, self.owner
        session_id = self.request.headers.get(SESSION_HEADER)
        if session_id and self.hub.closed(owner, session_id):
            raise ApiError(404, "this MCP session was closed; start a new one")
        opening = self.request.method == "POST" and not session_id
        if opening:
            await endpoint.state_isolation()  # what `initialize` will say
            try:
                self.manager.room_for(owner)  # all the user's sessions running: refused
            except ApiError as e:
                self._refuse(e.status_code, e.log_message)
                return
        await endpoint.start()
        await endpoint.http.handle_request(self._scope(owner), self._receive, self._send)
        if not self._finished:
            self.finish(set_content_type=self._content_type)
        if opening and self._opened and self.get_status() < 400:
            await self._count(owner, self._opened)
        elif session_id:
            self.hub.touch(owner, session_id)

    async def _count(self, owner: str, session_id: str) -> None:
        """A new MCP session counts against the cap from its ``initialize`` on: the oldest
        idle sessions close to make room, as for a session of ours."""
        try:
            victims = self.hub.opened(owner, session_id)
        except ApiError:  # another request took the last room meanwhile
            await self.endpoint.terminate(session_id)
            return
        await self.manager.make_room(victims)

    def _refuse(self, status: int, message: str) -> None:
        """A JSON-RPC error with an HTTP status, as the SDK answers what it refuses."""
        self.set_status(status)
        error = {"code": -32000, "message": message}
        self.finish(json.dumps({"jsonrpc": "2.0", "id": None, "error": error}))

    def _scope(self, owner: str) -> dict[str, Any]:
        req = self.request
        host, _, port = (req.host or "127.0.0.1").rpartition(":")
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": req.method,
            "scheme": req.protocol,
            "path": MCP_PATH,
            "raw_path": req.path.encode("latin-1"),
            "root_path": "",
            "query_string": (req.query or "").encode("latin-1"),
            "headers": [
                (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in req.headers.get_all()
            ],
            "client": (req.remote_ip or "", 0),
            "server": (host or req.host, int(port) if port.isdigit() else 80),
            "user": _principal(owner),
            OWNER_KEY: owner,
        }

    _body_sent = False

    async def _receive(self) -> dict[str, Any]:
        if not self._body_sent:
            self._body_sent = True
            return {"type": "http.request", "body": self.request.body or b"", "more_body": False}
        await self._gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        if self._finished:
            return
        if message["type"] == "http.response.start":
            self.set_status(message["status"])
            self.clear_header("Content-Type")
            for name, value in message.get("headers", []):
                header, text = name.decode("latin-1"), value.decode("latin-1")
                if header.lower() == "content-type":
                    self._content_type = text  # APIHandler.finish sets it again
                elif header.lower() == SESSION_HEADER:
                    self._opened = text
                self.add_header(header, text)
        elif message["type"] == "http.response.body":
            body = message.get("body", b"")
            if body:
                self.write(body)
            try:
                if message.get("more_body"):
                    await self.flush()
                else:
                    self.finish(set_content_type=self._content_type)
            except StreamClosedError:
                self._gone.set()


def routes() -> list[tuple[str, Any]]:
    return [(MCP_PATH, McpHandler)]
