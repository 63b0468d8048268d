"""Approving an install in the panel, in JupyterLab: headless Chromium, the scripted model,
a real package index on 127.0.0.1. The approval shows package, version, size and index;
Approve installs, and the next cell imports the package in the sandbox."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.e2e.browser.lab import LabPage
from tests.e2e.browser.test_panel_e2e import LOAD, session_detail
from tests.packages.index import Served, served_index
from tests.scripted_model import ScriptedModelServer, text, tool_calls
from tests.server.helpers import EXTENSION

NOTEBOOK = "install.ipynb"
IMPORT = "import tinyapp\nprint('tinyapp', tinyapp.__version__)"


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer([]).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with served_index(tmp_path_factory.mktemp("index")) as served:
        yield served


@pytest.fixture(scope="module")
def lab_config(model_server: ScriptedModelServer, index: Served) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {EXTENSION: True}},
        "CodeAgent": {
            "model": "scripted",
            "base_url": model_server.url,
            "api_key": "sk-browser-test",
            "pool_size": 1,
            "preload": [],
            "limits": {"cell_timeout": 60, "memory_mb": 1024},
            "packages": {"index_url": index.url, "cache_dir": str(index.cache)},
        },
    }


def test_approve_an_install_in_the_panel(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    model_server: ScriptedModelServer,
    index: Served,
) -> None:
    base_url, token, root = jupyterlab_server
    notebook = new_notebook(
        cells=[new_code_cell(LOAD, id="load"), new_code_cell("%agent use tinyapp", id="ask")],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    nbformat.write(notebook, root / NOTEBOOK)
    install = {"packages": ["tinyapp"], "reason": "The analysis needs tinyapp."}
    model_server.set_script(
        [
            tool_calls(("install_packages", install)),
            tool_calls(("run_cell", {"code": IMPORT})),
            text("tinyapp is installed."),
        ]
    )
    page = browser_page
    lab = LabPage(page, base_url, token)
    lab.open_notebook(NOTEBOOK)
    page.set_viewport_size({"width": 1280, "height": 1200})
    lab.run_cell("load")
    lab.run_cell("ask")
    panel = page.locator(".codeagent-panel").first
    table = panel.locator(".codeagent-install")
    table.wait_for(timeout=120_000)
    rows = [r.inner_text() for r in table.locator(".codeagent-package").all()]
    assert any("tinyapp" in r and "1.0" in r and index.url in r and "kB" in r for r in rows)
    assert any("tinydep" in r for r in rows)
    assert "The analysis needs tinyapp." in table.inner_text()
    screenshot(page, "install-approval")
    panel.locator(".codeagent-approve").first.click()
    panel.locator('.codeagent-run-status[data-status="answered"]').wait_for(timeout=120_000)
    assert "tinyapp 1.0" in panel.inner_text()
    screenshot(page, "install-done")
    session_id = panel.locator(".widget-html code").first.inner_text().strip()
    events = session_detail(base_url, token, session_id)["events"]
    [decided] = [e for e in events if e["type"] == "approval_decided"]
    assert decided["approved"] is True
    finished = [e for e in events if e["type"] == "tool_call_finished"]
    assert [f["name"] for f in finished] == ["install_packages", "run_cell"]
    assert {p["name"] for p in finished[0]["packages"]} == {"tinyapp", "tinydep"}
    printed = "".join("".join(o.get("text", "")) for o in finished[1]["outputs"])
    assert "tinyapp 1.0" in printed
