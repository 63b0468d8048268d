"""A real Jupyter server with the extension (pytest-jupyter), pointed at the scripted model.

The widget's client talks to it over real HTTP and WebSocket on loopback, exactly as it does
from a user's kernel; only the model is scripted.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403  (jp_serverapp, jp_fetch, …)
from traitlets.config import Config

from codeagent_jupyter.widget.client import AgentClient, ServerInfo
from tests.server.helpers import EXTENSION, SECRET

T = TypeVar("T")

SETTINGS: dict[str, Any] = {
    "model": "scripted",
    "api_key": SECRET,
    "pool_size": 1,
    "limits": {"cell_timeout": 20, "memory_mb": 1024},
    "idle_timeout": 0,
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "agent_settings(**traits): c.CodeAgent for a widget test")


@pytest.fixture
def jp_server_config(request: pytest.FixtureRequest, scripted_model: Any) -> Config:
    marker = request.node.get_closest_marker("agent_settings")
    extra = marker.kwargs if marker else {}
    return Config(
        {
            "ServerApp": {"jpserver_extensions": {EXTENSION: True}},
            "CodeAgent": {**SETTINGS, "base_url": scripted_model.url, **extra},
        }
    )


@pytest.fixture
def jp_env_jupyter_path() -> Path:
    """Keep the environment's share/jupyter visible: the sandbox kernel spec lives there."""
    return Path(sys.prefix) / "share" / "jupyter"


@pytest.fixture
def server_info(
    jp_serverapp: Any, jp_http_port: int, jp_base_url: str, http_server: Any
) -> ServerInfo:
    """Where the test server listens, as the widget's client sees it."""
    return ServerInfo(
        f"http://127.0.0.1:{jp_http_port}{jp_base_url}",
        jp_serverapp.identity_provider.token,
        str(jp_serverapp.root_dir),
    )


@pytest.fixture
def client(server_info: ServerInfo) -> AgentClient:
    return AgentClient(server_info, timeout=60)


@pytest.fixture
def run(jp_asyncio_loop: Any) -> Callable[[Awaitable[T]], T]:
    """Run a coroutine on the server's loop.

    pytest-jupyter serves on its own loop (``jp_asyncio_loop``), not on the loop
    pytest-asyncio gives ``async def`` tests, so these tests are plain functions that run
    their scenario where the server (and its sandboxes) live.
    """
    return jp_asyncio_loop.run_until_complete
