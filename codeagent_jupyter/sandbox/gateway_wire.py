"""The kernels REST + WebSocket protocol of a Jupyter kernel gateway, spoken directly.

Kernel Gateway and Enterprise Gateway both serve ``/api/kernels`` (start, interrupt,
delete) and ``/api/kernels/{id}/channels`` (one WebSocket carrying every channel).
jupyter_client's gateway client polls in a loop and drops the token on the socket; this
module instead reads the socket in one task and routes each message to the request that
caused it, so waiting costs no CPU and every request carries ``Authorization: token …``.

The socket asks for the binary subprotocol (``gateway_frames``), falling back to JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
import uuid
from datetime import datetime, timezone
from typing import Any

from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest
from tornado.websocket import WebSocketClientConnection, WebSocketClosedError, websocket_connect

from .gateway_frames import V1, decode, encode

CLOSED = {"closed": True}
"""Put in every waiting queue when the socket goes away (the gateway or the kernel left)."""


class GatewayError(Exception):
    """The gateway could not be reached or refused a request (one line, for people)."""

    def __init__(self, message: str, code: int = 0) -> None:
        super().__init__(message)
        self.code = code
        """The HTTP status the gateway answered (0: it did not answer)."""


class GatewayWire:
    """REST calls and one WebSocket to one kernel on a gateway."""

    def __init__(
        self, url: str, token: str = "", request_timeout: float = 30.0, binary: bool = True
    ) -> None:
        self.url = url.rstrip("/")
        self.ws_url = "ws" + self.url[4:] if self.url.startswith("http") else self.url
        self.token = token
        self.request_timeout = request_timeout
        self.kernel_id: str | None = None
        self.session = uuid.uuid4().hex
        self._ws: WebSocketClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._waiting: dict[str, asyncio.Queue[dict[str, Any]]] = {}
        self.binary = binary
        """Ask for the ``V1`` subprotocol (False: the legacy JSON protocol)."""
        self.protocol = ""
        """The subprotocol the gateway chose for the open socket ("" for legacy JSON)."""
        self.kernel_gone = asyncio.Event()
        """Set when the gateway says the kernel is restarting or dead (it died under us)."""

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"token {self.token}"
        return headers

    async def rest(
        self, method: str, path: str, body: Any = None, timeout: float | None = None
    ) -> Any:
        """One REST call; raises ``GatewayError`` with the gateway's own reason."""
        request = HTTPRequest(
            f"{self.url}{path}",
            method=method,
            headers=self._headers(),
            body=None if body is None else json.dumps(body),
            allow_nonstandard_methods=True,
            request_timeout=timeout or self.request_timeout,
            connect_timeout=min(timeout or self.request_timeout, 10.0),
        )
        try:
            response = await AsyncHTTPClient().fetch(request)
        except HTTPClientError as e:
            reason = ""
            if e.response is not None and e.response.body:
                with contextlib.suppress(ValueError, AttributeError):
                    reason = json.loads(e.response.body).get("message", "")
            if e.code in (401, 403):
                reason = f"{reason} (check the gateway token)".strip()
            message = f"gateway {method} {path}: HTTP {e.code} {reason}".strip()
            raise GatewayError(message, e.code) from e
        except (OSError, asyncio.TimeoutError) as e:
            raise GatewayError(f"gateway unreachable at {self.url}: {e}") from e
        return json.loads(response.body) if response.body else None

    async def start_kernel(self, name: str, env: dict[str, str]) -> str:
        model = await self.rest("POST", "/api/kernels", {"name": name, "env": env})
        self.kernel_id = str(model["id"])
        return self.kernel_id

    async def connect(self, timeout: float = 10.0) -> None:
        """Open the channels socket of ``kernel_id`` (closing an older one first)."""
        await self.close_socket()
        self.kernel_gone.clear()
        request = HTTPRequest(
            f"{self.ws_url}/api/kernels/{self.kernel_id}/channels?session_id={self.session}",
            headers=self._headers(),
            connect_timeout=timeout,
            request_timeout=timeout,
        )
        try:
            self._ws = await websocket_connect(
                request,
                max_message_size=256 * 1024 * 1024,
                subprotocols=[V1] if self.binary else None,
            )
        except (OSError, HTTPClientError, asyncio.TimeoutError) as e:
            raise GatewayError(f"gateway unreachable at {self.url}: {e}") from e
        self.protocol = self._ws.selected_subprotocol or ""
        self._ws.stream.set_nodelay(True)
        self._reader = asyncio.get_running_loop().create_task(self._read(self._ws))

    @property
    def connected(self) -> bool:
        return self._ws is not None and self._reader is not None and not self._reader.done()

    async def _read(self, ws: WebSocketClientConnection) -> None:
        while True:
            raw = await ws.read_message()
            if raw is None:
                break
            _quick_ack(ws)
            msg = decode(raw, self.protocol)
            if msg is None:
                continue
            parent = (msg.get("parent_header") or {}).get("msg_id")
            queue = self._waiting.get(parent) if parent else None
            if queue is not None:
                queue.put_nowait(msg)
            elif _kind(msg) == "status" and _state(msg) in ("restarting", "dead"):
                self.kernel_gone.set()
                for waiting in self._waiting.values():
                    waiting.put_nowait({"gone": True})
        for waiting in self._waiting.values():
            waiting.put_nowait(CLOSED)

    def send(
        self, channel: str, msg_type: str, content: dict[str, Any]
    ) -> asyncio.Queue[dict[str, Any]]:
        """Send one request; the returned queue receives every message it causes."""
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        queue.msg_id = self.post(channel, msg_type, content, queue)  # type: ignore[attr-defined]
        return queue

    def post(
        self, channel: str, msg_type: str, content: dict[str, Any], queue: asyncio.Queue[Any]
    ) -> str:
        """Send one request whose messages go to ``queue`` (shared by several requests);
        its msg_id, to ``forget_id`` when done."""
        if self._ws is None or not self.connected:
            raise GatewayError(f"gateway unreachable at {self.url}: the kernel socket is closed")
        msg_id = uuid.uuid4().hex
        self._waiting[msg_id] = queue
        header = {
            "msg_id": msg_id,
            "msg_type": msg_type,
            "session": self.session,
            "username": "codeagent",
            "date": datetime.now(timezone.utc).isoformat(),
            "version": "5.3",
        }
        msg = {"header": header, "parent_header": {}, "metadata": {}, "content": content}
        frame = encode(msg, channel, self.protocol)
        try:
            self._ws.write_message(frame, binary=isinstance(frame, bytes))
        except WebSocketClosedError:  # closed under us; the reader has not seen it yet
            self._waiting.pop(msg_id, None)
            raise GatewayError(f"gateway unreachable at {self.url}: the socket closed") from None
        return msg_id

    def forget(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self.forget_id(getattr(queue, "msg_id", ""))

    def forget_id(self, msg_id: str) -> None:
        self._waiting.pop(msg_id, None)

    async def kernel_alive(self, timeout: float) -> bool | None:
        """Whether the gateway reaches the kernel's process, whatever the kernel is doing.

        Opens (and closes) a second channels socket: the gateway completes that handshake
        only for a live process (see ``gateway_watch``). False: not within ``timeout``, or the
        kernel was deleted; None: the gateway itself could not say (unreachable, refused).
        """
        request = HTTPRequest(
            f"{self.ws_url}/api/kernels/{self.kernel_id}/channels?session_id={uuid.uuid4().hex}",
            headers=self._headers(),
            connect_timeout=self.request_timeout,
            request_timeout=self.request_timeout,
        )
        opening = websocket_connect(request)
        try:
            await asyncio.wait({opening}, timeout=timeout)
        finally:
            if not opening.done():  # a handshake that completes later must still be closed
                opening.add_done_callback(_close_probe)
        if not opening.done():
            return False
        error = opening.exception()
        if error is None:
            opening.result().close()
            return True
        if isinstance(error, HTTPClientError) and error.code == 404:
            return False
        return None

    async def kernel_info(self, timeout: float) -> bool:
        """A ``kernel_info`` round trip on the control channel: the kernel really answers."""
        try:
            queue = self.send("control", "kernel_info_request", {})
        except GatewayError:
            return False
        try:
            while True:
                msg = await asyncio.wait_for(queue.get(), timeout)
                if msg is CLOSED or msg.get("gone"):
                    return False
                if _kind(msg) == "kernel_info_reply":
                    return True
        except asyncio.TimeoutError:
            return False
        finally:
            self.forget(queue)

    async def close_socket(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            ws.close()
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader

    async def delete_kernel(self, retry_s: float = 10.0) -> None:
        """Close the socket and delete the kernel; a gateway that is gone is not an error.

        A kernel that just died may be in the middle of the gateway's own restart, during
        which jupyter_client answers a DELETE with HTTP 500 (its ``ready`` future is
        pending); the DELETE is retried for ``retry_s`` so that no kernel is left behind.
        """
        await self.close_socket()
        kernel_id, self.kernel_id = self.kernel_id, None
        if not kernel_id:
            return
        deadline = time.monotonic() + retry_s
        while True:
            try:
                await self.rest("DELETE", f"/api/kernels/{kernel_id}", timeout=10.0)
                return
            except GatewayError as e:
                if e.code < 500 or time.monotonic() > deadline:
                    return  # deleted already (404), or the gateway is gone
            await asyncio.sleep(0.3)


def _close_probe(opening: asyncio.Future[WebSocketClientConnection]) -> None:
    if not opening.cancelled() and opening.exception() is None:
        opening.result().close()


def _quick_ack(ws: WebSocketClientConnection) -> None:
    """Acknowledge at once: the gateway writes a cell's messages one by one without
    TCP_NODELAY, so with delayed ACKs each burst after the first waits ~40 ms (Nagle)."""
    sock = getattr(getattr(ws, "stream", None), "socket", None)
    if sock is not None and hasattr(socket, "TCP_QUICKACK"):
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)


def _kind(msg: dict[str, Any]) -> str:
    return str(msg.get("header", {}).get("msg_type") or msg.get("msg_type") or "")


def _state(msg: dict[str, Any]) -> str:
    return str(msg.get("content", {}).get("execution_state") or "")
