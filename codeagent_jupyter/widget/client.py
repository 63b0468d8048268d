"""A client of the codeagent server extension, for code running in a user's kernel.

The agent runs in the Jupyter server, so the kernel needs only the server's URL and token
(``discovery``). The model's API key stays in the server.

REST calls use tornado's async HTTP client and events a tornado WebSocket, both on the
kernel's own asyncio loop, so a cell returns at once and the panel updates while the user
keeps working. ``check()`` is the one blocking call: it lets ``%agent`` say in one line
that no server is reachable instead of showing an empty panel.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any
from urllib.parse import quote

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from ..errors import CodeAgentError
from ..events import Event
from .discovery import (
    NO_SERVER,
    TOKEN_ENV,
    URL_ENV,
    ClientError,
    ServerInfo,
    ServerNotFound,
    find_server,
    find_servers,
    notebook_path,
)
from .event_stream import follow

__all__ = [
    "NO_SERVER",
    "TOKEN_ENV",
    "URL_ENV",
    "AgentClient",
    "ClientError",
    "ServerInfo",
    "ServerNotFound",
    "find_server",
    "find_servers",
    "notebook_path",
]


class AgentClient:
    """REST + WebSocket access to ``/codeagent/api`` of one server, with its token."""

    def __init__(self, server: ServerInfo, *, timeout: float = 120.0) -> None:
        self.server = server
        self.api = server.url + "codeagent/api"
        self.timeout = timeout

    @classmethod
    def discover(
        cls,
        env: Mapping[str, str] | None = None,
        servers: Iterable[dict[str, Any]] | None = None,
        *,
        probe_timeout: float = 3.0,
    ) -> AgentClient:
        """A client of the server this kernel runs under. When several runtime files could
        be it, each is probed (``check``) in order and the first that answers wins; if none
        does, the first one's error (one line) is raised."""
        found = find_servers(env, servers)
        if len(found) == 1:
            return cls(found[0])
        first: CodeAgentError | None = None
        for info in found:
            client = cls(info)
            try:
                client.check(timeout=probe_timeout)
            except CodeAgentError as e:
                first = first or e
                continue
            return client
        assert first is not None
        raise first

    def headers(self) -> dict[str, str]:
        """The headers of every call: JSON, and the server's token."""
        headers = {"Content-Type": "application/json"}
        if self.server.token:
            headers["Authorization"] = f"token {self.server.token}"
        return headers

    # -- blocking check ---------------------------------------------------------------------

    def check(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Blocking ``GET /sessions``: proves the extension is there and the token works."""
        request = urllib.request.Request(self.api + "/sessions", headers=self.headers())
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                raise ServerNotFound(NO_SERVER) from None
            if e.code in (401, 403):
                raise ServerNotFound(
                    f"codeagent: the Jupyter server at {self.server.url} refused the token "
                    f"({e.code}); set {TOKEN_ENV} to its token"
                ) from None
            raise ClientError(e.code, f"codeagent: the server answered {e.code}") from None
        except (OSError, ValueError) as e:
            raise ServerNotFound(
                f"codeagent: cannot reach the Jupyter server at {self.server.url} ({e}); "
                f"is it running? (or set {URL_ENV}/{TOKEN_ENV})"
            ) from None

    # -- REST ------------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        raw: bytes | memoryview | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """One API call; the JSON answer, or ``ClientError`` with the server's message.
        A ``memoryview`` body is streamed from the caller's buffer, never copied whole."""
        payload: str | bytes | memoryview | None = raw
        if raw is None and (body is not None or method in ("POST", "PUT")):
            payload = json.dumps(body if body is not None else {})
        headers = dict(headers or self.headers())
        producer = None
        if isinstance(payload, memoryview):
            headers["Content-Length"] = str(payload.nbytes)
            producer, payload = _producer(payload.cast("B")), None
        req = HTTPRequest(
            self.api + path,
            method=method,
            headers=headers,
            body=payload,
            body_producer=producer,
            request_timeout=self.timeout,
        )
        try:
            response = await AsyncHTTPClient().fetch(req, raise_error=False)
        except (OSError, HTTPClientError) as e:
            raise ClientError(0, f"codeagent: cannot reach {self.server.url}: {e}") from None
        text = response.body.decode("utf-8", "replace") if response.body else ""
        if response.code == 599:
            raise ClientError(0, f"codeagent: cannot reach {self.server.url}: {response.error}")
        if response.code >= 400:
            try:
                message = json.loads(text).get("message") or response.reason
            except (ValueError, AttributeError):
                message = response.reason
            raise ClientError(response.code, f"codeagent: {message} ({response.code})")
        return json.loads(text) if text else None

    async def health(self) -> dict[str, Any]:
        return await self.request("GET", "/health")

    async def warm(self, notebook_path: str | None = None) -> dict[str, Any]:
        body = {"notebook_path": notebook_path} if notebook_path else {}
        return await self.request("POST", "/warm", body)

    async def start(
        self,
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
        cells_complete: bool | None = None,
        title: str | None = None,
    ) -> dict[str, Any]:
        """Start a session; returns its summary (``id``, ``state``, …) once it runs.

        ``namespace``: descriptions of this kernel's variables (``variables.summarize``, no
        values); ``uploads``: ids from ``upload`` to load into the sandbox first;
        ``kernel_id``: this kernel, whose Jupyter session names the notebook as it is
        called now; ``cells``: the live notebook's cells (all of them if ``cells_complete``);
        ``title``: how the request reads to people (a fix's "Fix In [9]: …").
        """
        body: dict[str, Any] = {"prompt": prompt}
        optional = {
            "notebook_path": notebook_path,
            "model": model,
            "limits": limits,
            "max_steps": max_steps,
            "namespace": namespace or None,
            "uploads": uploads or None,
            "kernel_id": kernel_id,
            "cells": cells,
            "cells_complete": cells_complete,
            "title": title,
        }
        body.update({k: v for k, v in optional.items() if v is not None})
        return await self.request("POST", "/sessions", body)

    async def upload(
        self, name: str, fmt: str, data: bytes | memoryview, sha256: str
    ) -> dict[str, Any]:
        """Send one serialized variable (``transfer.serialize``); its ``id`` for ``start``."""
        query = f"?name={_q(name)}&format={_q(fmt)}&sha256={_q(sha256)}"
        headers = {**self.headers(), "Content-Type": "application/octet-stream"}
        return await self.request("POST", "/uploads" + query, raw=data, headers=headers)

    async def sessions(self) -> list[dict[str, Any]]:
        return await self.request("GET", "/sessions")

    async def session(self, session_id: str) -> dict[str, Any]:
        return await self.request("GET", f"/sessions/{_q(session_id)}")

    async def follow_up(
        self, session_id: str, text: str, uploads: list[str] | None = None
    ) -> dict[str, Any]:
        """A message to a session; ``uploads``: ids from ``upload`` (variables first
        mentioned in it), loaded into the sandbox before it runs."""
        body: dict[str, Any] = {"text": text}
        if uploads:
            body["uploads"] = uploads
        return await self.request("POST", f"/sessions/{_q(session_id)}/messages", body)

    async def cancel(self, session_id: str) -> dict[str, Any]:
        return await self.request("POST", f"/sessions/{_q(session_id)}/cancel")

    async def pause(self, session_id: str) -> dict[str, Any]:
        """Release the session's sandbox after the step in flight; a message resumes it."""
        return await self.request("POST", f"/sessions/{_q(session_id)}/pause")

    async def approve(
        self, session_id: str, tool_call_id: str, approve: bool, remember: str = ""
    ) -> dict[str, Any]:
        """Decide a waiting tool call; ``remember="session"`` (with ``approve``) allows the
        tool for the rest of the session."""
        path = f"/sessions/{_q(session_id)}/approvals/{_q(tool_call_id)}"
        body: dict[str, Any] = {"approve": approve}
        if remember:
            body["remember"] = remember
        return await self.request("POST", path, body)

    async def approve_host(self, session_id: str, host: str, answer: str) -> dict[str, Any]:
        """Answer the sandbox's question about ``host``: ``once``, ``session`` or ``deny``
        (sent in the tool approvals' body, to the host's own route)."""
        path = f"/sessions/{_q(session_id)}/approvals/network/{_q(host)}"
        body: dict[str, Any] = {"approve": answer != "deny"}
        if answer == "session":
            body["remember"] = "session"
        return await self.request("POST", path, body)

    async def decide(self, session_id: str, cell_id: str, accept: bool) -> dict[str, Any]:
        """Record Accept/Reject of a cell (by tool call id) in the session notebook."""
        verb = "accept" if accept else "reject"
        return await self.request("POST", f"/sessions/{_q(session_id)}/cells/{_q(cell_id)}/{verb}")

    async def install(self, session_id: str, packages: list[str], reason: str) -> dict[str, Any]:
        """Install packages into the session's sandbox now (between runs): the user's own
        request, so no approval is asked; the ``packages_installed`` event, with ``summary``."""
        body = {"packages": packages, "reason": reason}
        return await self.request("POST", f"/sessions/{_q(session_id)}/packages", body)

    async def delete(self, session_id: str) -> dict[str, Any]:
        return await self.request("DELETE", f"/sessions/{_q(session_id)}")

    # -- events ----------------------------------------------------------------------------

    def events(self, session_id: str, since: int = 0, *, retries: int = 5) -> AsyncIterator[Event]:
        """Every event from ``since`` on, live, typed; reconnects if the socket drops, ends
        when the session is closed (``event_stream.follow``)."""
        return follow(self, session_id, since, retries=retries)


def _q(part: str) -> str:
    return quote(part, safe="")


def _producer(data: memoryview, chunk: int = 1 << 20) -> Any:
    """A tornado ``body_producer`` writing ``data`` a MiB at a time (each write waits until
    the previous one is flushed, so at most a chunk is buffered)."""

    async def produce(write: Any) -> None:
        for start in range(0, len(data), chunk):
            await write(data[start : start + chunk])

    return produce
