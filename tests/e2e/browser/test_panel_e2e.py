"""The notebook experience end to end: JupyterLab, headless Chromium, the scripted model.

A user's notebook runs ``%load_ext codeagent_jupyter`` and ``%agent …``; the kernel finds
the server it runs under by itself (no CODEAGENT_SERVER_URL here), the server runs the
agent in a sandbox, and the panel shows the plan and a plot live. Accept and Accept all
insert the cells below the panel, in the agent's order, with provenance; Stop cancels a
run stuck in ``while True: pass``. Screenshots go to the artifacts folder (docs/testing.md),
two of them also as its docs-screenshots/panel.png and accepted.png: copy those to docs/screenshots/
to refresh the README's pictures (a test never writes into the checkout).
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

import codeagent_jupyter
from tests.e2e.browser.lab import LabPage
from tests.scripted_model import ScriptedModelServer, delay, text, tool_calls
from tests.server.helpers import EXTENSION

LOAD = "%load_ext " + (
    "codeagent_jupyter"
    if hasattr(codeagent_jupyter, "load_ipython_extension")
    else "codeagent_jupyter.widget"
)
NOTEBOOK = "analysis.ipynb"
STUCK = "stuck.ipynb"
KERNELSPEC = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}
DATA = (
    "months = ['Jan', 'Feb', 'Mar', 'Apr']\n"
    "revenue = [120, 180, 150, 210]\n"
    "print(dict(zip(months, revenue)))"
)
BROKEN = "import matplotlib.pyplot as plt\nplt.plot(months, revenu)"
PLOT = (
    "import matplotlib.pyplot as plt\n"
    "plt.figure(figsize=(5, 3))\n"
    "plt.plot(months, revenue, marker='o')\n"
    "plt.title('Monthly revenue')\n"
    "plt.show()"
)
PLAN = ["Build the monthly revenue data", "Plot revenue by month", "Summarise the trend"]


def plan(done: int) -> dict[str, Any]:
    steps = [
        {"step": s, "status": "done" if i < done else "in_progress" if i == done else "pending"}
        for i, s in enumerate(PLAN)
    ]
    return {"steps": steps}


@pytest.fixture(scope="module")
def lab_config(model_server: ScriptedModelServer) -> dict[str, Any]:
    extensions = {EXTENSION: True}
    if EXTENSION != "codeagent_jupyter":
        extensions["codeagent_jupyter"] = False  # not an extension point yet; only warns
    return {
        "ServerApp": {"jpserver_extensions": extensions},
        "CodeAgent": {
            "model": "scripted",
            "base_url": model_server.url,
            "api_key": "sk-browser-test",
            "pool_size": 1,
            "stream": True,
            "limits": {"cell_timeout": 120, "memory_mb": 1024},
        },
    }


def session_detail(base_url: str, token: str, session_id: str) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{base_url}codeagent/api/sessions/{session_id}",
        headers={"Authorization": f"token {token}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_agent_panel_in_jupyterlab(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    model_server: ScriptedModelServer,
    artifacts_dir: Path,
) -> None:
    base_url, token, root = jupyterlab_server
    model_server.set_script(
        [
            tool_calls(("update_plan", plan(0)), content="I'll build the data, then plot it."),
            tool_calls(("run_cell", {"code": DATA})),
            tool_calls(("update_plan", plan(1))),
            tool_calls(("run_cell", {"code": BROKEN})),
            tool_calls(("run_cell", {"code": PLOT})),
            tool_calls(("update_plan", plan(2))),
            delay(4.0, text("Revenue rises from 120 in January to **210 in April**.")),
        ]
    )
    notebook = new_notebook(
        cells=[
            new_code_cell(LOAD, id="load"),
            new_code_cell("%agent plot monthly revenue for this year", id="agent"),
        ],
        metadata=KERNELSPEC,
    )
    nbformat.write(notebook, root / NOTEBOOK)
    # Stop is tried in a notebook of its own, so the README's pictures show only the run.
    stuck_cells = [new_code_cell(LOAD, id="load"), new_code_cell("%agent spin forever", id="stuck")]
    nbformat.write(new_notebook(cells=stuck_cells, metadata=KERNELSPEC), root / STUCK)
    page = browser_page
    lab = LabPage(page, base_url, token)
    lab.open_notebook(NOTEBOOK)
    lab.execute_command("application:toggle-left-area")  # more room for the panel
    page.set_viewport_size({"width": 1280, "height": 1500})  # the whole panel in one shot
    lab.run_cell("load")
    lab.run_cell("agent")

    panel = page.locator(".codeagent-panel").first
    panel.locator(".codeagent-plan li").first.wait_for(timeout=60_000)
    panel.locator("img.codeagent-plot").wait_for(timeout=90_000)
    assert panel.locator(".codeagent-plan li").count() == 3
    assert "NameError" in panel.locator(".codeagent-traceback").inner_text()
    assert "fix for cell 2" in panel.locator('.codeagent-cell[data-cell="3"]').inner_text()
    scroll_to(lab, "agent")
    assert panel.locator('.codeagent-run-status[data-status="running"]').count() == 1
    shutil.copyfile(screenshot(page, "panel"), _for_docs(artifacts_dir, "panel.png"))

    panel.locator('.codeagent-run-status[data-status="answered"]').wait_for(timeout=60_000)
    assert "210 in April" in panel.locator(".codeagent-answer").inner_text()
    session_id = panel.locator(".widget-html code").first.inner_text().strip()

    # Accept the plot cell first, then Accept all: the data cell must still land above it.
    cell_views = panel.locator(".codeagent-cell-view")
    assert cell_views.count() == 3
    cell_views.nth(2).locator(".codeagent-accept").click()
    lab.wait_cell_count(3)
    panel.locator(".codeagent-accept-all").click()
    lab.wait_cell_count(4)
    panel.locator(".codeagent-notice", has_text="Inserted cell 1").wait_for()
    lab.save()

    detail = session_detail(base_url, token, session_id)
    assert detail["notebook_path"] == NOTEBOOK  # the kernel told the server its notebook
    events = detail["events"]
    ran = {e["code"]: e for e in events if e["type"] == "tool_call_finished" and e.get("code")}
    cells = lab.read_saved(root).cells
    assert [c.source for c in cells] == [LOAD, notebook.cells[1].source, DATA, PLOT]
    for cell in cells[2:4]:
        finished = ran[cell.source]
        assert cell.metadata["codeagent"] == {
            "session_id": session_id,
            "step": finished["step"],
            "tool_call_id": finished["tool_call_id"],
        }
        assert cell.execution_count is None and cell.outputs == []  # inserted, not run
    decisions = {e["cell_id"]: e["accepted"] for e in events if e["type"] == "cell_decision"}
    assert decisions == {ran[DATA]["tool_call_id"]: True, ran[PLOT]["tool_call_id"]: True}
    lab.select_cell(cells[2].id)
    scroll_to(lab, cells[3].id, "end")
    shutil.copyfile(screenshot(page, "accepted"), _for_docs(artifacts_dir, "accepted.png"))

    # Stop: a run stuck in an endless loop is cancelled and says so.
    model_server.set_script(
        [tool_calls(("run_cell", {"code": "while True: pass"})), text("unreachable")]
    )
    lab.open_notebook(STUCK)
    lab.run_cell("load")
    lab.run_cell("stuck")
    stuck = page.locator(".codeagent-panel").last
    stuck.locator('.codeagent-cell[data-status="running"]').wait_for(timeout=60_000)
    stuck.locator(".codeagent-stop").click()
    stuck.locator('.codeagent-run-status[data-status="cancelled"]').wait_for(timeout=30_000)
    assert "cancelled" in stuck.locator(".codeagent-finished").inner_text()
    assert stuck.locator(".codeagent-stop").is_disabled()
    screenshot(page, "cancelled")


def scroll_to(lab: LabPage, cell_id: str, align: str = "start") -> None:
    """Scroll the notebook so the cell is at the top (or bottom) of the view."""
    index = lab.index_of(cell_id)
    lab.page.evaluate(
        """async ([path, index, align]) => {
          for (const w of window.jupyterapp.shell.widgets('main')) {
            if (w.context && w.context.path === path) {
              await w.content.scrollToItem(index, align);
            }
          }
        }""",
        [lab.path, index, align],
    )
    lab.page.wait_for_timeout(300)  # let the scroll settle before a screenshot


def _for_docs(artifacts_dir: Path, name: str) -> Path:
    """Where a picture for docs/screenshots/ goes: beside the other artifacts, not the docs."""
    folder = artifacts_dir / "docs-screenshots"
    folder.mkdir(exist_ok=True)
    return folder / name
