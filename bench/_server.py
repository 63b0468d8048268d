"""A real ``jupyter server`` with the extension, as a subprocess, for the benchmarks.

Shared by ``bench/server.py`` (many sessions at once) and ``bench/notebook.py`` (first
cell, uploads, bursts): one way to start it in a private home, call its API with the
token, follow a session's events, and read its memory from ``/proc``.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect

TOKEN = "bench-token"


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def tree_rss(pid: int, tree: dict[int, list[int]]) -> int:
    return rss_kib(pid) + sum(tree_rss(c, tree) for c in tree.get(pid, []))


class Server:
    def __init__(self, root: Path, home: Path, model_url: str, pool: int) -> None:
        self.root, self.home = root, home
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config_dir = home / "config"
        config_dir.mkdir(parents=True, exist_ok=True)
        off = ["jupyterlab", "jupyter_lsp", "notebook_shim", "jupyter_server_terminals"]
        extensions = {**dict.fromkeys(off, False), "codeagent_jupyter": True}
        config = {
            "ServerApp": {"jpserver_extensions": extensions},
            "CodeAgent": {
                "model": "scripted",
                "base_url": model_url,
                "pool_size": pool,
                "max_sessions_per_user": 1000,
            },
        }
        (config_dir / "jupyter_server_config.json").write_text(json.dumps(config))
        self.env = {
            **os.environ,
            "HOME": str(home),
            "JUPYTER_CONFIG_DIR": str(config_dir),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "JUPYTER_DATA_DIR": str(home / "data"),  # where the server keeps its sessions
        }
        self.base = f"http://127.0.0.1:{self.port}/codeagent/api"
        self.proc: subprocess.Popen[bytes] | None = None
        self.http = AsyncHTTPClient(max_clients=64)

    async def start(self) -> None:
        argv = [sys.executable, "-m", "jupyter_server", f"--port={self.port}", "--ip=127.0.0.1"]
        argv += ["--no-browser", "--allow-root", f"--ServerApp.root_dir={self.root}"]
        argv += [f"--IdentityProvider.token={TOKEN}"]
        log = (self.home / "server.log").open("wb")
        self.proc = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                await self.call("GET", "health")  # also starts (and waits for) the pool
                return
            except (ConnectionError, OSError):
                await asyncio.sleep(0.2)
        raise RuntimeError("server did not start")

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        request = HTTPRequest(
            f"{self.base}/{path}",
            method=method,
            body=json.dumps(body) if body is not None else None,
            headers={"Authorization": f"token {TOKEN}"},
            request_timeout=300,
        )
        response = await self.http.fetch(request)
        return json.loads(response.body or b"null")

    async def session(self, index: int, steps: int) -> dict[str, Any]:
        started = time.perf_counter()
        info = await self.call("POST", "sessions", {"prompt": f"session {index}"})
        created = time.perf_counter() - started
        url = f"ws://127.0.0.1:{self.port}/codeagent/api/sessions/{info['id']}/events?since=0"
        ws = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {TOKEN}"}))
        events = []
        while True:
            message = await ws.read_message()
            if message is None:
                break
            received = time.time()
            event = json.loads(message)
            events.append((received, event))
            if event["type"] == "run_finished":
                break
        ws.close()
        return {"id": info["id"], "create_s": created, "events": events}

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
