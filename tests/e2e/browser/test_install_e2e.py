"""Approving an install in the panel, in JupyterLab: headless Chromium, the scripted model,
a real package index on 127.0.0.1. The approval shows package, version, size and index;
Approve installs, and the next cell imports the package in the sandbox. The panel's own
"Install packages" section installs without the model, between runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.e2e.browser.lab import LabPage
from tests.e2e.browser.test_panel_e2e import LOAD, session_detail
from tests.e2e.browser.test_panel_hour_e2e import _set_theme
from tests.packages.index import Served, served_index
from tests.scripted_model import ScriptedModelServer, text, tool_calls
from tests.server.helpers import EXTENSION

NOTEBOOK = "install.ipynb"
IMPORT = "import tinyapp\nprint('tinyapp', tinyapp.__version__)"


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


def _finished_runs(base_url: str, token: str, session_id: str) -> list[dict[str, Any]]:
    events = session_detail(base_url, token, session_id)["events"]
    return [e for e in events if e["type"] == "run_finished"]


def test_install_from_the_panel_without_the_model(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    artifacts_dir: Path,
    model_server: ScriptedModelServer,
    index: Served,
) -> None:
    """The user types a package name in the panel's "Install packages" section and clicks
    Install between runs: no model turn, no approval card (the click is the approval); the
    next run's cell imports the package in the sandbox."""
    base_url, token, root = jupyterlab_server
    notebook = new_notebook(
        cells=[new_code_cell(LOAD, id="load"), new_code_cell("%agent say ready", id="ask")],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    nbformat.write(notebook, root / "panel-install.ipynb")
    model_server.set_script([text("Ready when you are.")])
    page = browser_page
    lab = LabPage(page, base_url, token)
    lab.open_notebook("panel-install.ipynb")
    page.set_viewport_size({"width": 1280, "height": 1200})
    lab.run_cell("load")
    lab.run_cell("ask")
    panel = page.locator(".codeagent-panel").first
    panel.locator('.codeagent-run-status[data-status="answered"]').wait_for(timeout=120_000)
    session_id = panel.locator(".widget-html code").first.inner_text().strip()
    asked_before = len(model_server.requests)

    section = panel.locator(".codeagent-packages")
    section.get_by_text("Install packages").click()
    section.locator(".codeagent-install-names input").fill("tinyapp")
    section.locator(".codeagent-install-reason input").fill("For the next step.")
    section.locator(".codeagent-install-button").click()
    said = section.locator('.codeagent-install-said[data-error="false"]')
    said.filter(has_text="Installed").wait_for(timeout=120_000)
    assert "tinyapp 1.0" in said.inner_text() and "tinydep 1.0" in said.inner_text()
    assert panel.locator(".codeagent-approve").count() == 0  # nothing to approve
    assert len(model_server.requests) == asked_before  # the model was not asked
    panel.get_by_text("asked for in the panel").first.wait_for(timeout=30_000)
    section.scroll_into_view_if_needed()
    screenshot(page, "light")
    panel.screenshot(path=str(artifacts_dir / "install-panel-light.png"))
    _set_theme(lab, "JupyterLab Dark")
    panel.screenshot(path=str(artifacts_dir / "install-panel-dark.png"))
    screenshot(page, "dark")
    _set_theme(lab, "JupyterLab Light")

    # A refusal is one line in the section, and nothing is installed.
    section.locator(".codeagent-install-names input").fill("onlysrc")
    section.locator(".codeagent-install-button").click()
    refused = section.locator('.codeagent-install-said[data-error="true"]')
    refused.wait_for(timeout=120_000)
    assert "no wheel of onlysrc" in refused.inner_text()
    assert not index.marker.exists()

    model_server.set_script(
        [tool_calls(("run_cell", {"code": IMPORT})), text("tinyapp is importable.")]
    )
    panel.locator(".codeagent-prompt textarea").fill("use tinyapp")
    panel.locator(".codeagent-send").click()
    for _ in range(600):
        if len(_finished_runs(base_url, token, session_id)) >= 2:
            break
        page.wait_for_timeout(200)
    events = session_detail(base_url, token, session_id)["events"]
    [installed] = [e for e in events if e["type"] == "packages_installed"]
    assert {p["name"] for p in installed["packages"]} == {"tinyapp", "tinydep"}
    finished = [e for e in events if e["type"] == "tool_call_finished"]
    printed = "".join("".join(o.get("text", "")) for o in finished[-1]["outputs"])
    assert "tinyapp 1.0" in printed
