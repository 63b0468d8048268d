"""The panel in a JupyterLab that also runs Jupyter AI 3.2 (headless Chromium, the built
labextension, real sandboxes, the scripted model).

Jupyter AI brings jupyter_server_mcp, whose MCP server writes ``jpserver-mcp-<pid>.json``,
with the Jupyter server's own pid, next to the server's runtime file: ``%agent`` must still
find the Jupyter server. Skipped where Jupyter AI is not installed, unless
``CODEAGENT_JUPYTER_AI_TESTS=required`` (the CI lane that installs it) makes that a failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nbformat.v4 import new_code_cell

from tests.e2e.browser.jupyter_ai_lab import (  # noqa: F401  (fixtures used below)
    jupyter_ai,
    lab_config,
    model_server,
    needs_jupyter_ai,
)
from tests.e2e.browser.lab import LabPage
from tests.e2e.browser.test_first_hour_e2e import shown, status, write
from tests.e2e.browser.test_panel_e2e import LOAD
from tests.scripted_model import ScriptedModelServer, text, tool_calls

pytestmark = needs_jupyter_ai


def test_agent_panel_with_jupyter_ai_installed(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    model_server: ScriptedModelServer,  # noqa: F811  (the fixture imported above)
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
