"""What the browser tests with Jupyter AI 3.2 share: the skip (a failure where CI's Jupyter AI
lane promises it), the scripted model and the JupyterLab settings beside Jupyter AI's own
extensions. Test modules import ``needs_jupyter_ai`` as their ``pytestmark`` and the fixtures
by name."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.persona.server import jupyter_ai_missing
from tests.scripted_model import ScriptedModelServer
from tests.server.helpers import EXTENSION

REQUIRED = os.environ.get("CODEAGENT_JUPYTER_AI_TESTS") == "required"
needs_jupyter_ai = pytest.mark.skipif(
    jupyter_ai_missing() is not None and not REQUIRED, reason=str(jupyter_ai_missing())
)


@pytest.fixture(scope="module", autouse=True)
def jupyter_ai() -> None:
    """Where the CI lane promises Jupyter AI, its absence fails instead of skipping."""
    missing = jupyter_ai_missing()
    if missing is not None:
        pytest.fail(missing, pytrace=False)


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer([]).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def lab_config(model_server: ScriptedModelServer) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {EXTENSION: True}},
        # Jupyter AI's extensions stay enabled (their own jupyter-config files); the MCP
        # server takes a free port instead of its fixed default, 3001.
        "MCPExtensionApp": {"mcp_port": 0},
        "CodeAgent": {
            "model": "scripted",
            "base_url": model_server.url,
            "api_key": "sk-browser-test",
            "pool_size": 1,
            "preload": [],
            "limits": {"cell_timeout": 60, "memory_mb": 1024},
        },
    }
