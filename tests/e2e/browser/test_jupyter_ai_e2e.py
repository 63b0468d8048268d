"""The panel in a JupyterLab that also runs Jupyter AI 3.2 (headless Chromium, the built
labextension, real sandboxes, the scripted model).

Jupyter AI brings jupyter_server_mcp, whose MCP server writes ``jpserver-mcp-<pid>.json``,
with the Jupyter server's own pid, next to the server's runtime file: ``%agent`` must still
find the Jupyter server. Skipped where Jupyter AI is not installed, unless
``CODEAGENT_JUPYTER_AI_TESTS=required`` (the CI lane that installs it) makes that a failure.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nbformat.v4 import new_code_cell

from tests.e2e.browser.lab import LabPage
from tests.e2e.browser.test_first_hour_e2e import shown, status, write
from tests.e2e.browser.test_panel_e2e import LOAD
from tests.scripted_model import ScriptedModelServer, text, tool_calls
from tests.server.helpers import EXTENSION


def _jupyter_ai_missing() -> str | None:
    for module in ("jupyter_ai", "jupyter_server_mcp"):
        if importlib.util.find_spec(module) is None:
            return f"{module} is not installed: pip install 'jupyter-ai==3.2.*'"
    return None


REQUIRED = os.environ.get("CODEAGENT_JUPYTER_AI_TESTS") == "required"
pytestmark = pytest.mark.skipif(
    _jupyter_ai_missing() is not None and not REQUIRED, reason=str(_jupyter_ai_missing())
)


@pytest.fixture(scope="module", autouse=True)
def jupyter_ai() -> None:
    """Where the CI lane promises Jupyter AI, its absence fails instead of skipping."""
    missing = _jupyter_ai_missing()
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


def test_agent_panel_with_jupyter_ai_installed(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    model_server: ScriptedModelServer,
) -> None:
    base_url, token, root = jupyterlab_server
    runtime = root.parent / "runtime"
    mcp_files = list(runtime.glob("jpserver-mcp-*.json"))
    assert mcp_files, f"Jupyter AI's MCP server wrote no runtime file in {runtime}"
    server_files = [p for p in runtime.glob("jpserver-*.json") if p not in mcp_files]
    assert [p.name for p in mcp_files] == [
        p.name.replace("jpserver-", "jpserver-mcp-") for p in server_files
    ]

    model_server.set_script(
        [tool_calls(("run_cell", {"code": "print(6 * 7)"})), text("The answer is 42.")]
    )
    write(
        root,
        "with-ai.ipynb",
        [new_code_cell(LOAD, id="load"), new_code_cell("%agent six times seven", id="ask")],
    )
    lab = LabPage(browser_page, base_url, token)
    lab.open_notebook("with-ai.ipynb")
    browser_page.set_viewport_size({"width": 1280, "height": 1100})
    lab.run_cell("load")
    lab.run_cell("ask")
    panel = shown(lab).locator(".codeagent-panel").first
    panel.locator(status("answered")).wait_for(timeout=90_000)
    assert "42" in panel.locator(".codeagent-answer").inner_text()
    screenshot(browser_page, "with-jupyter-ai")
