"""Binary websocket frames: a message's binary buffers (a widget's or comm's data) arrive
intact, over the binary ``v1.kernel.websocket.jupyter.org`` subprotocol that Kernel Gateway 3
offers and over the legacy JSON protocol (where such a message is the one binary frame);
a frame that is no kernel message is skipped without closing the socket.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from jupyter_server.services.kernels.connection.base import (
    deserialize_msg_from_ws_v1,
    serialize_msg_to_ws_v1,
)
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets
from tornado.web import Application
from tornado.websocket import WebSocketHandler

from codeagent_jupyter.sandbox import SandboxLimits
from codeagent_jupyter.sandbox.gateway import GatewaySandbox
from codeagent_jupyter.sandbox.gateway_frames import V1
from codeagent_jupyter.sandbox.gateway_wire import GatewayWire
from tests.e2e.gateway.conftest import Gateway

COMM_CELL = (
    "from comm import create_comm\n"
    "c = create_comm(target_name='codeagent.test', data={'k': 1}, buffers=[b'\\x00\\xffopen'])\n"
    "c.send(data={'n': 2}, buffers=[memoryview(b'second'), b'\\x01' * 70000])\n"
    "print('after the comm')"
)


async def _messages(wire: GatewayWire, code: str) -> list[dict[str, Any]]:
    """Every message a cell causes, up to its idle status."""
    content = {"code": code, "silent": False, "store_history": False, "user_expressions": {}}
    queue = wire.send("shell", "execute_request", {**content, "allow_stdin": False})
    found: list[dict[str, Any]] = []
    try:
        while True:
            msg = await asyncio.wait_for(queue.get(), 30)
            found.append(msg)
            state = msg["content"].get("execution_state") if "content" in msg else None
            if msg["header"]["msg_type"] == "status" and state == "idle":
                return found
    finally:
        wire.forget(queue)


@pytest.mark.parametrize("binary", [True, False], ids=["v1", "legacy-json"])
async def test_buffers_arrive_intact(gateway: Gateway, workspace: Path, binary: bool) -> None:
    box = GatewaySandbox(workspace, SandboxLimits(), url=gateway.url, token=gateway.token)
    box.wire = GatewayWire(gateway.url, gateway.token, binary=binary)
    async with box:
        assert box.wire.protocol == (V1 if binary else "")
        found = await _messages(box.wire, COMM_CELL)
        kinds = [m["header"]["msg_type"] for m in found]
        assert "comm_open" in kinds and "comm_msg" in kinds, kinds
        opened = found[kinds.index("comm_open")]
        sent = found[kinds.index("comm_msg")]
        assert [bytes(b) for b in opened["buffers"]] == [b"\x00\xffopen"]
        assert [bytes(b) for b in sent["buffers"]] == [b"second", b"\x01" * 70000]
        assert sent["content"]["data"] == {"n": 2} and sent["channel"] == "iopub"
        # Through the sandbox API the comm traffic is no output, and nothing is lost around it.
        result = await box.execute(COMM_CELL)
        assert result.status == "ok" and result.text.strip() == "after the comm"


class _Odd(WebSocketHandler):
    """A channels socket that answers each request with a binary frame that is no kernel
    message, then the real reply (what a gateway bug or a proxy could do)."""

    def select_subprotocol(self, subprotocols: list[str]) -> str | None:
        return V1 if V1 in subprotocols else None

    def on_message(self, message: str | bytes) -> None:
        assert isinstance(message, bytes)
        channel, parts = deserialize_msg_from_ws_v1(message)
        request = json.loads(parts[0])
        self.write_message(b"\x07not a kernel message", binary=True)
        reply = {
            "header": {"msg_id": "r1", "msg_type": "kernel_info_reply"},
            "parent_header": request,
            "metadata": {},
            "content": {"status": "ok"},
        }
        frame = serialize_msg_to_ws_v1(reply, channel, lambda o: json.dumps(o).encode())
        self.write_message(frame, binary=True)


@pytest_asyncio.fixture
async def odd_server() -> AsyncIterator[str]:
    """Served on the test's own event loop."""
    sockets = bind_sockets(0, "127.0.0.1")
    server = HTTPServer(Application([(r"/api/kernels/([^/]+)/channels", _Odd)]))
    server.add_sockets(sockets)
    try:
        yield f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
    finally:
        server.stop()


async def test_a_frame_that_is_no_message_is_skipped(odd_server: str) -> None:
    wire = GatewayWire(odd_server)
    wire.kernel_id = "k"
    await wire.connect()
    try:
        assert wire.protocol == V1
        assert await wire.kernel_info(timeout=10)  # the reply after the odd frame arrives
        assert wire.connected
    finally:
        await wire.close_socket()
