"""A real Jupyter server with the extension, pointed at the scripted model, with real sandboxes.

Tests choose extension settings with ``@pytest.mark.codeagent(**traits)``; ``api`` wraps
``jp_fetch``/``jp_ws_fetch`` with the JSON and WebSocket plumbing every test needs.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from pytest_jupyter.jupyter_core import (  # noqa: F401  (fixtures only, not its async hooks)
    echo_kernel_spec,
    jp_config_dir,
    jp_data_dir,
    jp_env_config_path,
    jp_environ,
    jp_home_dir,
    jp_kernel_dir,
    jp_runtime_dir,
    jp_system_config_path,
    jp_system_jupyter_path,
)
from pytest_jupyter.jupyter_server import (  # noqa: F401
    jp_argv,
    jp_auth_header,
    jp_base_url,
    jp_configurable_serverapp,
    jp_fetch,
    jp_http_port,
    jp_logging_stream,
    jp_nbconvert_templates,
    jp_root_dir,
    jp_server_cleanup,
    jp_serverapp,
    jp_web_app,
    jp_ws_fetch,
)
from pytest_jupyter.pytest_tornasync import (  # noqa: F401
    http_server,
    http_server_client,
    http_server_port,
)
from traitlets.config import Config

from tests.server.helpers import EXTENSION, SECRET, Api

BASE_SETTINGS: dict[str, Any] = {
    "model": "scripted",
    "api_key": SECRET,
    "pool_size": 0,  # sessions start their own kernel: no refills competing for the CPU
    "limits": {"cell_timeout": 30, "memory_mb": 1024},
    "idle_timeout": 0,
    "max_sessions_per_user": 4,
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "codeagent(**traits): c.CodeAgent settings for the test")
    config.addinivalue_line("markers", "server_app(**traits): c.ServerApp settings for the test")


@pytest.fixture
def jp_server_config(request: pytest.FixtureRequest, scripted_model: Any) -> Config:
    marker = request.node.get_closest_marker("codeagent")
    settings = {
        **BASE_SETTINGS,
        "base_url": scripted_model.url,
        **(marker.kwargs if marker else {}),
    }
    server_marker = request.node.get_closest_marker("server_app")
    server = {"jpserver_extensions": {EXTENSION: True}}
    server.update(server_marker.kwargs if server_marker else {})
    return Config({"ServerApp": server, "CodeAgent": settings})


@pytest.fixture
async def jp_asyncio_loop() -> asyncio.AbstractEventLoop:
    """The server runs on pytest-asyncio's loop, the one the async tests run on."""
    return asyncio.get_running_loop()


@pytest.fixture
def jp_env_jupyter_path() -> Path:
    """pytest-jupyter hides the environment's share/jupyter; the sandbox kernel spec lives there."""
    return Path(sys.prefix) / "share" / "jupyter"


@pytest.fixture
def api(jp_fetch: Any, jp_ws_fetch: Any) -> Api:  # noqa: F811
    return Api(jp_fetch, jp_ws_fetch)
