"""A real ``jupyter-kernelgateway`` on 127.0.0.1 offering ``codeagent-sandbox``, one per module.

Its kernel spec is the shipped one with the operator's ceiling in ``env`` (what a gateway
host configures); the gateway is ended by its PID. ``GATEWAY_TOKEN`` protects it, so every
test also proves the token reaches both the REST calls and the WebSocket.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from codeagent_jupyter.sandbox.gateway_ceiling import MAX_LIMITS_ENV
from tests.quick_python import python_m

REPO = Path(__file__).resolve().parents[3]
STARTUP_S = 90.0
"""A gateway imports jupyter_server and starts in a few seconds; a loaded CI machine is slower."""
GATEWAY_TOKEN = "codeagent-gateway-test-token"
CEILING = {"memory_mb": 2048, "cpu_seconds": 600, "max_processes": 512, "network": False}
"""The operator's ceiling on the test gateway: the defaults, so only larger requests fail."""


@dataclass
class Gateway:
    url: str
    token: str
    root: Path
    """The allowed workspace root (sandboxes must work below it)."""
    process: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def kernel_spec_dir(base: Path, ceiling: dict[str, object] | None) -> Path:
    """A JUPYTER_PATH with the codeagent-sandbox spec carrying ``ceiling`` in its env
    (None: a spec without a ceiling, as a careless operator might install it)."""
    spec = json.loads((REPO / "kernels" / "codeagent-sandbox" / "kernel.json").read_text())
    spec["argv"][0] = sys.executable
    spec["env"] = {"PYTHONPATH": str(REPO)}
    if ceiling is not None:
        spec["env"][MAX_LIMITS_ENV] = json.dumps(ceiling)
    target = base / "kernels" / "codeagent-sandbox"
    target.mkdir(parents=True)
    (target / "kernel.json").write_text(json.dumps(spec))
    return base


def start_gateway(
    tmp: Path,
    *extra: str,
    token: str = GATEWAY_TOKEN,
    ceiling: dict[str, object] | None = CEILING,
    env: dict[str, str] | None = None,
) -> Gateway:
    """A started gateway; ``ceiling`` goes into its kernel spec (with ``workspace_root``),
    ``env`` into the gateway's own environment (the kernels' too)."""
    root = tmp / "workspaces"
    root.mkdir()
    top = None if ceiling is None else {**ceiling, "workspace_root": str(root)}
    jupyter_path = kernel_spec_dir(tmp / "share", top)
    port = _free_port()
    env = {
        **os.environ,
        "JUPYTER_PATH": str(jupyter_path),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_DATA_DIR": str(tmp / "data"),
        "PYTHONPATH": str(REPO),
        **(env or {}),
    }
    log = tmp / "gateway.log"
    argv = [
        *python_m("kernel_gateway"),  # what jupyter-kernelgateway runs
        "--KernelGatewayApp.ip=127.0.0.1",
        f"--KernelGatewayApp.port={port}",
        f"--KernelGatewayApp.auth_token={token}",
        "--JupyterWebsocketPersonality.list_kernels=True",
        *extra,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv, env=env, cwd=tmp, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    gateway = Gateway(url, token, root, process, log)
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"kernel gateway exited: {gateway.log_text()[-2000:]}")
        request = urllib.request.Request(
            f"{url}/api/kernelspecs", headers={"Authorization": f"token {token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                if "codeagent-sandbox" in json.loads(response.read())["kernelspecs"]:
                    return gateway
        except OSError:
            time.sleep(0.3)
    stop_gateway(gateway)
    raise RuntimeError(f"kernel gateway did not come up in {STARTUP_S:g} s")


def stop_gateway(gateway: Gateway, sig: int = signal.SIGTERM) -> None:
    """End the gateway by its PID (its kernels with it: they are in its session)."""
    if gateway.process.poll() is None:
        os.kill(gateway.process.pid, sig)
        try:
            gateway.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.kill(gateway.process.pid, signal.SIGKILL)
            gateway.process.wait()
    # Kernels it started live in its process group; none may outlive a test module.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(gateway.process.pid, signal.SIGKILL)


def gateway_kernels(gateway: Gateway) -> list[dict[str, object]]:
    request = urllib.request.Request(
        f"{gateway.url}/api/kernels", headers={"Authorization": f"token {gateway.token}"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        return list(json.loads(response.read()))


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    if shutil.which("jupyter-kernelgateway") is None:
        pytest.skip("jupyter-kernelgateway is not installed (pip install jupyter_kernel_gateway)")
    gw = start_gateway(tmp_path_factory.mktemp("gateway"))
    try:
        yield gw
    finally:
        stop_gateway(gw)


@pytest.fixture
def workspace(gateway: Gateway, tmp_path: Path) -> Path:
    """A fresh workspace below the gateway's allowed root (a shared volume: same path)."""
    path = gateway.root / tmp_path.name
    path.mkdir()
    return path


def server_config(gateway: Gateway, model_url: str, limits: dict[str, int]) -> Any:
    """A Jupyter server config whose codeagent sessions run on ``gateway``'s kernels."""
    from traitlets.config import Config

    from tests.server.conftest import BASE_SETTINGS
    from tests.server.helpers import EXTENSION

    settings = {
        **BASE_SETTINGS,
        "base_url": model_url,
        "limits": limits,
        "sandbox_backend": "gateway",
        "gateway_url": gateway.url,
        "gateway_token": gateway.token,
    }
    server = {"jpserver_extensions": {EXTENSION: True}}
    return Config({"ServerApp": server, "CodeAgent": settings})
