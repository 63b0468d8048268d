"""A real JupyterHub on 127.0.0.1 with the classroom gateway as a managed service.

Shared by the tests that need a class (tests/hub, and ``@codeagent`` on a hub in
tests/persona): ``running_hub`` starts one and stops it, one per test module (starting it
and two students' servers takes seconds). The DummyAuthenticator, SimpleLocalProcessSpawner
(servers as the current user, homes under the test's folder), the gateway started by the hub
from ``c.JupyterHub.services`` and the scripted model server as the class's provider, which
accepts only the class key. Needs the ``jupyterhub`` package and ``configurable-http-proxy``
(npm); without them the tests skip, unless ``CODEAGENT_HUB_TESTS=required`` (CI), where they
fail.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.quick_python import python_m
from tests.scripted_model import ScriptedModelServer, text, tool_calls

ROOT = Path(__file__).resolve().parents[2]
CLASS_KEY = "sk-class-key-7f3a9c2e5b1d4f6a8c0e2b4d6f8a0c2e"
"""The class's provider key: only the gateway's environment may hold it."""
ADMIN_TOKEN = "test-admin-token-0f1e2d3c4b5a69788796a5b4c3d2e1f0"
GATEWAY = "codeagent-gateway"
STUDENTS = ("alice", "bob", "dave")
BASE_POLICY: dict[str, Any] = {
    "default_model": "scripted",
    "allowed_models": ["scripted", "scripted-mini"],
    "daily_tokens": 10_000_000,
    "max_concurrent": 8,
}


def _missing() -> str | None:
    if importlib.util.find_spec("jupyterhub") is None:
        return "the jupyterhub package is not installed (pip install '.[hub]')"
    if shutil.which("configurable-http-proxy") is None:
        return "configurable-http-proxy is not installed (npm install -g configurable-http-proxy)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Upstream:
    """The scripted provider: a tool call on "use a tool", then text; usage it reported."""

    def __init__(self) -> None:
        self.reported: list[int] = []
        self._lock = threading.Lock()
        self.server = ScriptedModelServer(self.answer, api_key=CLASS_KEY)

    def answer(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        last = messages[-1]
        usage = {"prompt_tokens": 40 + len(messages), "completion_tokens": 9}
        with self._lock:
            self.reported.append(usage["prompt_tokens"] + usage["completion_tokens"])
        if last["role"] == "user" and "use a tool" in str(last.get("content")):
            return tool_calls(("run_cell", {"code": "print(6 * 7)"}), usage=usage)
        return text("done: the class gateway answered", usage=usage)

    def total(self) -> int:
        with self._lock:
            return sum(self.reported)


class Hub:
    """The running hub: REST helpers as the test admin service and as students."""

    def __init__(
        self,
        tmp: Path,
        upstream: Any,
        students: tuple[str, ...] = STUDENTS,
        gateway_config: str = "",
        server_config: dict[str, Any] | None = None,
    ) -> None:
        self.tmp, self.upstream, self.students = tmp, upstream, students
        self.gateway_config = gateway_config
        """More ``c.CodeAgentGateway…`` lines for the gateway's config file."""
        self.server_config = server_config or {}
        """More sections of the students' servers' ``jupyter_server_config.json``."""
        self.port, self.hub_port, self.proxy_api, self.gateway_port = (
            _free_port() for _ in range(4)
        )
        self.url = f"http://127.0.0.1:{self.port}"
        self.gateway_url = f"{self.url}/services/{GATEWAY}"
        self.policy_path = tmp / "policy.json"
        self.ledger_path = tmp / "ledger.sqlite"
        self.client = httpx.Client(timeout=60)
        self.tokens: dict[str, str] = {}
        self.sessions: dict[str, str] = {}
        self.proc: subprocess.Popen[bytes] | None = None

    # -- set-up ------------------------------------------------------------------------------
    def write_policy(self, **changes: Any) -> None:
        """Replace the policy file (the gateway re-reads it on its next request)."""
        self.policy_path.write_text(json.dumps({**BASE_POLICY, **changes}))
        stamp = time.time_ns() + 1_000_000  # a new mtime even within the same clock tick
        os.utime(self.policy_path, ns=(stamp, stamp))

    def write_config(self) -> Path:
        tmp = self.tmp
        gateway_config = tmp / "gateway_config.py"
        gateway_config.write_text(
            f"c.CodeAgentGateway.upstream_url = {self.upstream.server.url!r}\n"
            f"c.CodeAgentGateway.policy_file = {str(self.policy_path)!r}\n"
            f"c.CodeAgentGateway.ledger = {str(self.ledger_path)!r}\n"
            'c.CodeAgentGateway.prices = {"scripted": {"input": 1.0, "output": 2.0}}\n'
            + self.gateway_config
        )
        server_config = tmp / "jupyter-config"
        server_config.mkdir()
        (server_config / "jupyter_server_config.json").write_text(
            json.dumps(
                {
                    "CodeAgent": {
                        "pool_size": 0,
                        "idle_timeout": 0,
                        "limits": {"cell_timeout": 30, "memory_mb": 1024},
                    },
                    # Where Jupyter AI is installed, its MCP server in each student's server
                    # takes a free port, not the fixed default 3001.
                    "MCPExtensionApp": {"mcp_port": 0},
                    **self.server_config,
                }
            )
        )
        for user in self.students:
            (tmp / "home" / user / "work").mkdir(parents=True)
        access = [f"access:services!service={GATEWAY}", f"read:services!service={GATEWAY}"]
        hub_config = tmp / "jupyterhub_config.py"
        hub_config.write_text(
            f"""
import sys
c = get_config()  # noqa
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {self.port}
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = {self.hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{self.proxy_api}"
c.JupyterHub.db_url = "sqlite:///{tmp}/hub.sqlite"
c.JupyterHub.cookie_secret_file = "{tmp}/cookie_secret"
c.JupyterHub.pid_file = "{tmp}/hub.pid"
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {{*{list(self.students)!r}, "carol"}}
c.JupyterHub.load_groups = {{
    "students": {{"users": {list(self.students)!r}}},
    "exam-room": {{"users": ["dave"]}},
    "instructors": {{"users": ["carol"]}},
}}
c.JupyterHub.load_roles = [
    {{"name": "class-ai", "scopes": {access!r}, "groups": ["students", "instructors"]}},
    {{"name": "admin", "services": ["test-admin"]}},
]
c.JupyterHub.services = [
    {{"name": "test-admin", "api_token": {ADMIN_TOKEN!r}}},
    {{
        "name": {GATEWAY!r},
        "url": "http://127.0.0.1:{self.gateway_port}",
        "command": [sys.executable, "-m", "codeagent_jupyter.hub", "--config",
                    {str(gateway_config)!r}],
        "environment": {{"CODEAGENT_GATEWAY_API_KEY": {CLASS_KEY!r},
                         "PYTHONPATH": {str(ROOT)!r}}},
        "oauth_no_confirm": True,
    }},
]
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = "{tmp}/home/{{username}}"
c.Spawner.cmd = {python_m("jupyterhub.singleuser")!r}
c.Spawner.args = ["--allow-root"]
c.Spawner.notebook_dir = "{tmp}/home/{{username}}/work"
c.Spawner.environment = {{"PYTHONPATH": {str(ROOT)!r}, "JUPYTER_CONFIG_DIR": "{server_config}"}}
c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server", *{access!r}]
c.Spawner.start_timeout = 90
c.Spawner.http_timeout = 90
"""
        )
        return hub_config

    def start(self) -> None:
        self.write_policy()
        config = self.write_config()
        log = open(self.tmp / "hub.log", "wb")  # noqa: SIM115 (closed with the process)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "CODEAGENT"))}
        self.proc = subprocess.Popen(
            [*python_m("jupyterhub"), "-f", str(config)],
            cwd=self.tmp,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**env, "PYTHONPATH": str(ROOT)},
        )
        self.wait_for(lambda: self.admin("GET", "/users").status_code == 200, "the hub")
        self.wait_for(
            lambda: self.client.get(f"{self.gateway_url}/health").status_code == 200, "the gateway"
        )

    def wait_for(self, ready: Any, what: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None and self.proc.poll() is None, self.log_tail()
            try:
                if ready():
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise AssertionError(f"{what} did not come up in {timeout}s\n{self.log_tail()}")

    def log_tail(self) -> str:
        path = self.tmp / "hub.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.client.close()

    # -- requests ----------------------------------------------------------------------------
    def admin(self, method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"token {ADMIN_TOKEN}"}
        return self.client.request(method, f"{self.url}/hub/api{path}", headers=headers, **kw)

    def token(self, user: str, scopes: list[str] | None = None) -> str:
        """A hub API token of ``user`` (all of the user's permissions unless ``scopes``)."""
        body: dict[str, Any] = {"note": "test", "expires_in": 3600}
        if scopes is not None:
            body["scopes"] = scopes
        response = self.admin("POST", f"/users/{user}/tokens", json=body)
        assert response.status_code == 201, response.text
        return str(response.json()["token"])

    def login(self, user: str) -> str:
        """The student's token (cached): what their browser session can do."""
        if user not in self.tokens:
            self.tokens[user] = self.token(user)
        return self.tokens[user]

    def start_server(self, user: str) -> None:
        response = self.admin("POST", f"/users/{user}/server")
        assert response.status_code in (201, 202), response.text

        def ready() -> bool:
            model = self.admin("GET", f"/users/{user}").json()
            return bool((model.get("servers") or {}).get("", {}).get("ready"))

        self.wait_for(ready, f"{user}'s server")

    def gateway(self, method: str, path: str, token: str | None, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return self.client.request(method, f"{self.gateway_url}/{path}", headers=headers, **kw)

    def chat(self, token: str | None, model: str = "scripted", **kw: Any) -> httpx.Response:
        body = {"model": model, "messages": [{"role": "user", "content": "hi"}], **kw}
        return self.gateway("POST", "v1/chat/completions", token, json=body)


def running_hub(tmp: Path, **kw: Any) -> Iterator[Hub]:
    """A started hub with its scripted provider (``kw`` goes to ``Hub``), stopped after."""
    missing = _missing()
    if missing:
        if os.environ.get("CODEAGENT_HUB_TESTS") == "required":
            pytest.fail(f"hub tests required but {missing}")
        pytest.skip(missing)
    upstream = Upstream()
    upstream.server.start()
    running = Hub(tmp, upstream, **kw)
    try:
        running.start()
        yield running
    finally:
        running.stop()
        upstream.server.stop()


def server_pid(user: str) -> int:
    """The student's single-user server process (found by its hub environment)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if f"JUPYTERHUB_USER={user}".encode() in environ and b"jupyterhub.singleuser" in cmdline:
            return int(entry.name)
    raise AssertionError(f"no single-user server process for {user}")


def environ_of(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""  # gone, or not readable: either way it holds nothing for us


def environment(pid: int) -> dict[str, str]:
    """The process's environment variables (empty when it is gone or unreadable)."""
    pairs = (line.split(b"=", 1) for line in environ_of(pid).split(b"\0") if b"=" in line)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}
