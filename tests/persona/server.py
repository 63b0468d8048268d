"""A real Jupyter server with Jupyter AI's extensions beside ours, and a chat client for it.

The server is a subprocess of this environment (``python -m jupyter_server``) with its own
config, data and runtime folders under a temporary directory: it loads every server
extension the environment enables (Jupyter AI's persona manager, router, chat and MCP
server, JupyterLab, codeagent) from their jupyter-config files, as a user's server would.
``ChatClient`` speaks jupyterlab_chat's WebSocket protocol (``/api/chat/ws/<path>``), the
one JupyterLab's chat panel uses when real-time collaboration is off.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tornado.httpclient import HTTPRequest
from tornado.websocket import WebSocketClientConnection, websocket_connect

from tests.quick_python import python_m

PERSONA_ID = "jupyter-ai-personas::codeagent_jupyter::CodeAgentPersona"
START_TIMEOUT = 90.0


def jupyter_ai_missing() -> str | None:
    """Why Jupyter AI's tests cannot run here, or None."""
    for module in ("jupyter_ai", "jupyter_server_mcp", "jupyter_ai_persona_manager"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed: pip install 'jupyter-ai==3.2.*'"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def jupyter_server(
    base: Path, config: dict[str, Any], python_config: str = ""
) -> Iterator[tuple[str, str, Path, Path]]:
    """A running server; yields ``(base_url, token, root_dir, log_file)``. ``python_config``
    is a ``jupyter_server_config.py`` beside the JSON one (a configuration as a user writes it)."""
    root, config_dir = base / "root", base / "config"
    for path in (root, config_dir):
        path.mkdir(parents=True)
    (config_dir / "jupyter_server_config.json").write_text(json.dumps(config))
    if python_config:
        (config_dir / "jupyter_server_config.py").write_text(python_config)
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(config_dir),
        "JUPYTER_DATA_DIR": str(base / "jupyter-data"),
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "IPYTHONDIR": str(base / "ipython"),
        "JUPYTERLAB_SETTINGS_DIR": str(base / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "npm_config_logs_max": "0",
    }
    log = base / "server.log"
    command = [
        *python_m("jupyter_server"),
        "--no-browser",
        "--ServerApp.allow_root=True",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--ServerApp.root_dir={root}",
        f"--IdentityProvider.token={token}",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, env=env, cwd=root, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    base_url = f"http://127.0.0.1:{port}/"
    try:
        _wait_ready(f"{base_url}api/status?token={token}", proc, log)
        yield base_url, token, root, log
    finally:
        _stop(proc)


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"the server was not ready after {START_TIMEOUT} s:\n{log.read_text()}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM lets the server shut its kernels down; SIGKILL the group if it hangs."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def request(base_url: str, token: str, method: str, path: str, body: Any = None) -> Any:
    """``(status, parsed JSON or text)`` of one HTTP call to the server."""
    data = json.dumps(body).encode() if body is not None else None
    if method == "POST" and data is None:
        data = b"{}"
    req = urllib.request.Request(
        base_url + path,
        data=data,
        method=method,
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


class ChatClient:
    """One chat panel's connection: sends messages, collects every frame the server sends."""

    def __init__(self, connection: WebSocketClientConnection) -> None:
        self.connection = connection
        self.frames: list[dict[str, Any]] = []
        self.messages: dict[str, dict[str, Any]] = {}
        """Message id -> its latest version, as the server broadcast it."""
        self.users: dict[str, dict[str, Any]] = {}
        self.chat_id = ""

    @classmethod
    async def connect(cls, base_url: str, token: str, chat_path: str) -> ChatClient:
        url = base_url.replace("http://", "ws://") + f"api/chat/ws/{chat_path}"
        connection = await websocket_connect(
            HTTPRequest(url, headers={"Authorization": f"token {token}"})
        )
        client = cls(connection)
        first = await client._read(30.0)
        assert first.get("action") == "connection", first
        return client

    async def _read(self, timeout: float) -> dict[str, Any]:
        raw = await asyncio.wait_for(self.connection.read_message(), timeout)
        assert raw is not None, "the chat connection closed"
        frame = json.loads(raw)
        self.frames.append(frame)
        action = frame.get("action")
        if action == "connection":
            self.chat_id = frame["id"]
            self.users.update(frame.get("users") or {})
            for message in frame.get("messages") or []:
                self.messages[message["id"]] = message
        elif action == "message":
            self.messages[frame["message"]["id"]] = frame["message"]
        elif action == "users":
            self.users.update(frame.get("users") or {})
        return frame

    def send(self, body: str, persona: str = PERSONA_ID, **extra: Any) -> str:
        message_id = uuid.uuid4().hex
        frame = {
            "type": "client",
            "action": "send",
            "id": message_id,
            "body": body,
            "metadata": {"to_persona": persona},
            **extra,
        }
        self.connection.write_message(json.dumps(frame))
        return message_id

    def from_persona(self) -> list[dict[str, Any]]:
        """The persona's messages, oldest first."""
        mine = [m for m in self.messages.values() if m.get("sender") == PERSONA_ID]
        return sorted(mine, key=lambda m: m.get("time", 0))

    async def until(self, done: Callable[[ChatClient], bool], timeout: float = 120.0) -> None:
        """Read frames until ``done(self)`` holds."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not done(self):
            left = deadline - asyncio.get_running_loop().time()
            assert left > 0, f"timed out; persona said: {[m['body'] for m in self.from_persona()]}"
            try:
                await self._read(min(left, 5.0))
            except asyncio.TimeoutError:
                continue

    def close(self) -> None:
        self.connection.close()


PERSONA_STATE = "https://schema.jupyter.org/jupyter_ai_persona_manager/persona_state/v1"


class PersonaEvents:
    """The server's Jupyter Events (``/api/events/subscribe``) as the chat's frontend gets
    them: Jupyter AI publishes each persona's state there (its model, usage, ...)."""

    def __init__(self, connection: WebSocketClientConnection) -> None:
        self.connection = connection
        self.events: list[dict[str, Any]] = []
        self._reader = asyncio.ensure_future(self._read())

    @classmethod
    async def connect(cls, base_url: str, token: str) -> PersonaEvents:
        url = base_url.replace("http://", "ws://") + "api/events/subscribe"
        connection = await websocket_connect(
            HTTPRequest(url, headers={"Authorization": f"token {token}"})
        )
        return cls(connection)

    async def _read(self) -> None:
        while (raw := await self.connection.read_message()) is not None:
            self.events.append(json.loads(raw))

    def models(self, persona: str = PERSONA_ID) -> list[dict[str, Any]]:
        """Each model configuration ``persona`` published, oldest first."""
        return [
            e["model"]
            for e in self.events
            if e.get("schema_id") == PERSONA_STATE
            and e.get("persona_id") == persona
            and "model" in e
        ]

    def close(self) -> None:
        self._reader.cancel()
        self.connection.close()
