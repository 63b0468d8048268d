"""A data scientist's first hour in JupyterLab (headless Chromium, the built labextension,
real sandboxes, the scripted model): six ``%agent`` runs in a row; a renamed notebook;
``%agent fix`` on cells never saved; the "Fix with codeagent" button on an error; the
kernel's interrupt (■) stopping a run. Screenshots go to the artifacts folder (docs/testing.md)."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.e2e.browser.lab import LabPage
from tests.e2e.browser.test_panel_e2e import LOAD
from tests.scripted_model import ScriptedModelServer, text, tool_calls
from tests.server.helpers import EXTENSION

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
DATA = "prices = [1, 2, 3]"
BROKEN = "total = sum(prices) / count\nprint(total)"
FIXED = "total = sum(prices) / len(prices)\nprint(total)"
DIVIDE = "ratio = 1 / 0"
DIVIDE_FIXED = "ratio = 1 / 1"
FIXES = {"broken": FIXED, "divide": DIVIDE_FIXED}
FIX_CELL = re.compile(r"edit_cell on cell_id '([^']+)'")
RUNNING = '.codeagent-cell[data-status="running"]'


def status(name: str) -> str:
    return f'.codeagent-run-status[data-status="{name}"]'


def script(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The model, by request: ``spin`` runs until stopped, a fix request proposes the fix
    of the cell it names, anything else is answered at once."""
    last = messages[-1]
    if last["role"] == "tool":
        return text("Proposed the fix." if "Proposed an edit" in last["content"] else "Done.")
    asked = json.dumps(last)
    if "spin" in asked:
        return tool_calls(("run_cell", {"code": "import time\nwhile True: time.sleep(0.1)"}))
    named = FIX_CELL.search(asked)
    if named and named.group(1) in FIXES:
        edit = {"cell_id": named.group(1), "new_source": FIXES[named.group(1)], "reason": "fix"}
        return tool_calls(("edit_cell", edit))
    return text("Here is the answer.")


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer(script).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def lab_config(model_server: ScriptedModelServer) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {EXTENSION: True}},
        "CodeAgent": {
            "model": "scripted",
            "base_url": model_server.url,
            "api_key": "sk-browser-test",
            "pool_size": 1,
            "preload": [],
            "max_sessions_per_user": 4,
            "limits": {"cell_timeout": 120, "memory_mb": 1024},
        },
    }


def api(base_url: str, token: str, path: str) -> Any:
    request = urllib.request.Request(
        f"{base_url}codeagent/api/{path}", headers={"Authorization": f"token {token}"}
    )
    with urllib.request.urlopen(request, timeout=20) as response:
        return json.loads(response.read())


def write(root: Path, path: str, cells: list[Any]) -> None:
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC}), root / path)


def shown(lab: LabPage) -> Any:
    """The open notebook's tab (earlier tests' notebooks stay open in other tabs)."""
    return lab.page.get_by_role("tabpanel", name=lab.path.rsplit("/", 1)[-1])


def session_of(panel: Any) -> str:
    return str(panel.locator(".widget-html code").first.inner_text().strip())


def test_six_agent_runs_in_a_row(
    jupyterlab_server: tuple[str, str, Path], browser_page: Any, screenshot: Any
) -> None:
    """The fifth and sixth runs close the oldest idle sessions instead of failing (429)."""
    base_url, token, root = jupyterlab_server
    runs = [new_code_cell(f"%agent question {i}", id=f"run{i}") for i in range(1, 7)]
    write(root, "six.ipynb", [new_code_cell(LOAD, id="load"), *runs])
    lab = LabPage(browser_page, base_url, token)
    lab.open_notebook("six.ipynb")
    browser_page.set_viewport_size({"width": 1280, "height": 1400})
    lab.run_cell("load")
    ids = []
    for i in range(1, 7):
        lab.run_cell(f"run{i}")
        panel = shown(lab).locator(".codeagent-panel").nth(i - 1)
        panel.scroll_into_view_if_needed()
        panel.locator(status("answered")).wait_for(timeout=90_000)
        ids.append(session_of(panel))
    screenshot(browser_page, "sixth-answered")
    sessions = {s["id"]: s for s in api(base_url, token, "sessions") if s["id"] in ids}
    assert len(sessions) == 6
    assert [sessions[i]["closed_reason"] for i in ids[:2]] == ["session_cap", "session_cap"]
    assert all(sessions[i]["state"] == "idle" for i in ids[2:])
    assert (
        "too many open sessions" not in browser_page.locator(".codeagent-panel").all_inner_texts()
    )


def test_rename_then_agent_and_fix(
    jupyterlab_server: tuple[str, str, Path], browser_page: Any, screenshot: Any
) -> None:
    base_url, token, root = jupyterlab_server
    write(
        root,
        "Untitled.ipynb",
        [
            new_code_cell(LOAD, id="load"),
            new_code_cell(DATA, id="data"),
            new_code_cell(BROKEN, id="broken"),
            new_code_cell("%agent describe prices", id="ask"),
            new_code_cell("%agent fix", id="fix"),
            new_code_cell("%agent describe prices again", id="again"),
        ],
    )
    lab = LabPage(browser_page, base_url, token)
    lab.open_notebook("Untitled.ipynb")
    browser_page.set_viewport_size({"width": 1280, "height": 1400})
    lab._js("await panel.context.rename('sales-analysis.ipynb');")  # what File > Rename does
    lab.path = "sales-analysis.ipynb"
    lab._wait("panel !== null")
    for cell_id in ("load", "data", "broken", "ask"):
        lab.run_cell(cell_id)
    asked = shown(lab).locator(".codeagent-panel").first
    asked.locator(status("answered")).wait_for(timeout=90_000)
    detail = api(base_url, token, f"sessions/{session_of(asked)}")
    assert detail["notebook_path"] == "sales-analysis.ipynb"

    lab.run_cell("fix")
    fix = shown(lab).locator(".codeagent-panel").nth(1)
    fix.locator(status("answered")).wait_for(timeout=90_000)
    assert "+total = sum(prices) / len(prices)" in fix.locator(".codeagent-diff").inner_text()
    screenshot(browser_page, "renamed-fix-proposed")
    fix.locator(".codeagent-cell-view .codeagent-accept").first.click()
    lab.wait_source(lab.index_of("broken"), FIXED)
    lab.save()
    saved = {c.id: c for c in lab.read_saved(root).cells}
    assert saved["broken"].source == FIXED
    assert not (root / "Untitled.ipynb").exists()

    # File > Save Notebook As…: JupyterLab opens the copy with a kernel of its own.
    lab.execute_command("docmanager:save-as")
    name = browser_page.locator(".jp-Dialog input")
    name.fill("sales-copy.ipynb")
    browser_page.locator(".jp-Dialog .jp-mod-accept").click()
    lab.path = "sales-copy.ipynb"
    lab._wait("panel !== null && !panel.context.model.dirty")
    lab.wait_kernel_idle(timeout=60_000)
    lab.run_cell("load")
    lab.run_cell("again")
    again = shown(lab).locator(".codeagent-panel").first
    again.locator(status("answered")).wait_for(timeout=90_000)
    assert api(base_url, token, f"sessions/{session_of(again)}")["notebook_path"] == (
        "sales-copy.ipynb"
    )


def test_fix_on_a_notebook_never_saved(
    jupyterlab_server: tuple[str, str, Path], browser_page: Any, screenshot: Any
) -> None:
    base_url, token, root = jupyterlab_server
    write(root, "draft.ipynb", [new_code_cell(LOAD, id="load")])
    lab = LabPage(browser_page, base_url, token)
    lab.open_notebook("draft.ipynb")
    browser_page.set_viewport_size({"width": 1280, "height": 1400})
    # The user types three cells; none of them is saved.
    for index, (cell_id, source) in enumerate(
        [("data", DATA), ("broken", BROKEN), ("fix", "%agent fix")], start=1
    ):
        lab._js(
            "panel.content.model.sharedModel.insertCell(arg[0], {cell_type: 'code', "
            "source: arg[2], id: arg[1], metadata: {}, outputs: [], execution_count: null});",
            [index, cell_id, source],
        )
    for cell_id in ("load", "data", "broken", "fix"):
        lab.run_cell(cell_id)
    assert [c["id"] for c in nbformat.read(root / "draft.ipynb", as_version=4).cells] == ["load"]
    panel = shown(lab).locator(".codeagent-panel").first
    panel.locator(status("answered")).wait_for(timeout=90_000)
    assert "+total = sum(prices) / len(prices)" in panel.locator(".codeagent-diff").inner_text()
    screenshot(browser_page, "unsaved-fix-proposed")
    panel.locator(".codeagent-cell-view .codeagent-accept").first.click()
    lab.wait_source(lab.index_of("broken"), FIXED)


def test_fix_button_on_an_error_output(
    jupyterlab_server: tuple[str, str, Path], browser_page: Any, screenshot: Any
) -> None:
    """The button works even when the extension was not loaded before the error."""
    base_url, token, root = jupyterlab_server
    write(root, "button.ipynb", [new_code_cell(DIVIDE, id="divide")])
    lab = LabPage(browser_page, base_url, token)
    lab.open_notebook("button.ipynb")
    browser_page.set_viewport_size({"width": 1280, "height": 1400})
    lab.run_cell("divide")
    button = shown(lab).locator(".codeagent-fix-button")
    button.wait_for(timeout=30_000)
    assert button.count() == 1 and button.inner_text() == "Fix with codeagent"
    screenshot(browser_page, "fix-button")
    button.click()
    lab.wait_cell_count(2)
    inserted = lab.cells()[1]
    assert inserted["source"] == "%load_ext codeagent_jupyter\n%agent fix In[1]"
    panel = shown(lab).locator(".codeagent-panel").first
    panel.locator(status("answered")).wait_for(timeout=90_000)
    assert "+ratio = 1 / 1" in panel.locator(".codeagent-diff").inner_text()
    panel.locator(".codeagent-cell-view .codeagent-accept").first.click()
    lab.wait_source(lab.index_of("divide"), DIVIDE_FIXED)
    screenshot(browser_page, "fix-button-accepted")


def test_kernel_interrupt_stops_the_agent(
    jupyterlab_server: tuple[str, str, Path], browser_page: Any, screenshot: Any
) -> None:
    base_url, token, root = jupyterlab_server
    write(
        root, "spin.ipynb", [new_code_cell(LOAD, id="load"), new_code_cell("%agent spin", id="a")]
    )
    lab = LabPage(browser_page, base_url, token)
    lab.open_notebook("spin.ipynb")
    lab.run_cell("load")
    lab.run_cell("a")
    panel = shown(lab).locator(".codeagent-panel").first
    panel.locator(RUNNING).wait_for(timeout=60_000)
    shown(lab).locator('jp-button[data-command="notebook:interrupt-kernel"]').click()  # ■
    panel.locator(status("cancelled")).wait_for(timeout=60_000)
    screenshot(browser_page, "interrupted")
    detail = api(base_url, token, f"sessions/{session_of(panel)}")
    assert [e for e in detail["events"] if e["type"] == "run_finished"][-1]["status"] == "cancelled"
