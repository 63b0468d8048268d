"""Server lifetime: sessions survive a crash as recordings; shutdown leaves no kernel behind."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.quick_python import python_m
from tests.scripted_model import text, tool_calls
from tests.server.helpers import EXTENSION, Api, descendants, processes_in

TOKEN = "lifecycle-test-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """``jupyter server`` as a real subprocess on a given root (so it can be killed)."""

    def __init__(
        self,
        root: Path,
        home: Path,
        model_url: str,
        codeagent: dict[str, Any] | None = None,
        limits: str = "{'cell_timeout': 300}",
    ) -> None:
        self.root, self.home, self.model_url = root, home, model_url
        self.codeagent = codeagent or {}
        self.limits = limits
        """``c.CodeAgent.limits`` as given on the command line (a Python dict literal)."""
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ServerProcess:
        # Only this extension: the others would only slow the start down.
        extensions = dict.fromkeys(
            [
                "codeagent_jupyter",
                "jupyterlab",
                "jupyter_lsp",
                "notebook_shim",
                "jupyter_server_terminals",
            ],
            False,
        )
        extensions[EXTENSION] = True
        config_dir = self.home / "config"
        config_dir.mkdir(exist_ok=True)
        config = {
            "ServerApp": {"jpserver_extensions": extensions},
            "CodeAgent": {
                "model": "scripted",
                "base_url": self.model_url,
                "pool_size": 1,
                **self.codeagent,
            },
        }
        (config_dir / "jupyter_server_config.json").write_text(json.dumps(config))
        env = {
            **os.environ,
            "HOME": str(self.home),
            "JUPYTER_CONFIG_DIR": str(config_dir),
            "JUPYTER_DATA_DIR": str(self.home / "data"),
            "JUPYTER_RUNTIME_DIR": str(self.home / "runtime"),
        }
        argv = [
            *python_m("jupyter_server"),
            f"--port={self.port}",
            "--ip=127.0.0.1",
            "--no-browser",
            "--allow-root",
            f"--ServerApp.root_dir={self.root}",
            f"--IdentityProvider.token={TOKEN}",
            f"--CodeAgent.limits={self.limits}",  # traits from the command line too
        ]
        self.log_path = self.home / f"server-{self.port}.log"
        log = self.log_path.open("wb")
        self.proc = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, "the server exited while starting"
            try:
                self.call("GET", "sessions")
                return self
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        raise AssertionError("the server did not start within 60 s")

    def call(self, method: str, path: str, body: Any = None) -> Any:
        url = f"http://127.0.0.1:{self.port}/codeagent/api/{path}"
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Authorization", f"token {TOKEN}")
        with urllib.request.urlopen(request, timeout=20) as response:
            return json.loads(response.read() or b"null")

    def wait_for(self, predicate: Any, timeout: float = 30) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError("condition not reached in time")


@pytest.fixture
def servers(tmp_path: Path) -> Any:
    started: list[ServerProcess] = []
    yield started
    for server in started:
        if server.proc is not None and server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait(10)


def test_restart_lists_the_interrupted_session(
    tmp_path: Path, scripted_model: Any, servers: list[ServerProcess]
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "home").mkdir()
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": "print('first step done')"})),
            tool_calls(("run_cell", {"code": "import time; time.sleep(120)"})),
            text("never reached"),
        ]
    )
    first = ServerProcess(root, tmp_path / "home", scripted_model.url).start()
    servers.append(first)
    session = first.call("POST", "sessions", {"prompt": "two steps, the second slow"})
    sid = session["id"]

    def second_cell_running() -> bool:
        events = first.call("GET", f"sessions/{sid}")["events"]
        return sum(e["type"] == "tool_call_started" for e in events) == 2

    first.wait_for(second_cell_running)
    first.proc.send_signal(signal.SIGKILL)  # a crash: no chance to clean up
    first.proc.wait(10)
    for pid in processes_in(root):  # the dead server's kernels, started in our root
        os.kill(pid, signal.SIGKILL)

    second = ServerProcess(root, tmp_path / "home", scripted_model.url).start()
    servers.append(second)
    listed = {s["id"]: s for s in second.call("GET", "sessions")}
    assert listed[sid]["status"] == "interrupted"
    assert listed[sid]["state"] == "closed"
    assert listed[sid]["prompt"] == "two steps, the second slow"
    detail = second.call("GET", f"sessions/{sid}")
    assert detail["events"][-1]["type"] == "run_finished"
    assert detail["events"][-1]["status"] == "interrupted"
    assert detail["events"][0]["limits"]["cell_timeout"] == 300  # from the command line
    finished = [e for e in detail["events"] if e["type"] == "tool_call_finished"]
    assert len(finished) == 1 and "first step done" in json.dumps(finished[0]["outputs"])

    path = tmp_path / "home" / "data" / "codeagent" / "sessions" / f"{sid}.ipynb"
    # nothing of the server's in the workspace
    assert not (root / ".codeagent" / "sessions").exists()
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata["codeagent"]["status"] == "interrupted"
    sources = [c.source for c in notebook.cells]
    assert "print('first step done')" in sources
    assert any(s.startswith("**Stopped (interrupted)") for s in sources)
    # Decisions still work on a recorded session.
    second.call("POST", f"sessions/{sid}/cells/{finished[0]['tool_call_id']}/accept")
    accepted = [
        c
        for c in nbformat.read(path, as_version=4).cells
        if c.metadata.get("codeagent", {}).get("accepted")
    ]
    assert [c.source for c in accepted] == ["print('first step done')"]

    # A graceful stop of the second server takes its pool kernel with it.
    second.wait_for(lambda: processes_in(root))
    second.proc.send_signal(signal.SIGTERM)
    second.proc.wait(30)
    assert processes_in(root) == []


@pytest.mark.codeagent(pool_size=1)
async def test_shutdown_leaves_no_sandbox_processes(
    api: Api, scripted_model: Any, jp_serverapp: Any
) -> None:
    before = set(descendants())
    scripted_model.set_script(
        lambda messages: (
            tool_calls(("run_cell", {"code": "while True: pass"}))
            if len(messages) < 3
            else text("stopped")
        )
    )
    await api.ok("POST", "warm")  # a sandbox held for a session not yet asked for
    for prompt in ("spin", "spin too"):
        session = await api.start(prompt)
        ws = await api.connect(session["id"])
        await api.read_until(ws, lambda e: e["type"] == "tool_call_started")
        ws.close()
    spawned = {pid: cmd for pid, cmd in descendants().items() if pid not in before}
    launchers = [cmd for cmd in spawned.values() if "codeagent_jupyter.sandbox.launcher" in cmd]
    assert len(launchers) >= 3, spawned  # two busy sessions and the warm sandbox, at least

    await jp_serverapp._cleanup()  # what stopping the server does
    await asyncio.sleep(0.5)
    left = {pid: cmd for pid, cmd in descendants().items() if pid in spawned}
    assert left == {}, f"sandbox processes left after shutdown: {left}"
