"""``edit_cell`` and ``%agent fix`` in JupyterLab: headless Chromium, the built labextension,
the scripted model. Accept replaces the failed cell's source in the live notebook (by cell
id, outputs cleared, provenance set), checked in the notebook saved on disk; Reject leaves a
cell as it was; every other cell is untouched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.e2e.browser.lab import LabPage
from tests.e2e.browser.test_panel_e2e import LOAD, session_detail
from tests.scripted_model import ScriptedModelServer, text, tool_calls
from tests.server.helpers import EXTENSION

NOTEBOOK = "fixme.ipynb"
DATA = "prices = [1, 2, 3]\nprint(len(prices))"
BROKEN = "total = sum(prices) / count\nprint(total)"
FIXED = "total = sum(prices) / len(prices)\nprint(total)"
OTHER = "print('keep me')"
DATA_EDITED = "prices = [1, 2, 3, 4]\nprint(len(prices))"
STALE = "# codeagent: proposed replacement for cell data (cell data changed since the agent "
STALE += "read it)\np = 1"
CHECK = "prices = [1, 2, 3]\nprint(sum(prices) / len(prices))"


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
            "limits": {"cell_timeout": 60, "memory_mb": 1024},
        },
    }


def test_edit_cell_accept_and_reject_in_jupyterlab(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    model_server: ScriptedModelServer,
) -> None:
    base_url, token, root = jupyterlab_server
    notebook = new_notebook(
        cells=[
            new_code_cell(LOAD, id="load"),
            new_code_cell(DATA, id="data"),
            new_code_cell(BROKEN, id="broken"),
            new_code_cell(OTHER, id="other"),
            new_code_cell("%agent fix", id="fix"),
            new_code_cell("%agent tidy up my last cell", id="tidy"),
            new_code_cell("%agent tweak my data", id="tweak"),
        ],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    nbformat.write(notebook, root / NOTEBOOK)
    model_server.set_script(
        [
            tool_calls(("run_cell", {"code": CHECK})),  # the agent checks the fix first
            tool_calls(
                (
                    "edit_cell",
                    {
                        "cell_id": "broken",
                        "new_source": FIXED,
                        "reason": "`count` is not defined: divide by `len(prices)`.",
                    },
                )
            ),
            text("Divide by the number of prices."),
        ]
    )
    page = browser_page
    lab = LabPage(page, base_url, token)
    lab.open_notebook(NOTEBOOK)
    page.set_viewport_size({"width": 1280, "height": 1400})
    for cell_id in ("load", "data", "broken"):
        lab.run_cell(cell_id)
    lab.run_cell("fix")

    panel = page.locator(".codeagent-panel").first
    panel.locator('.codeagent-run-status[data-status="answered"]').wait_for(timeout=90_000)
    diff = panel.locator(".codeagent-diff")
    assert "+total = sum(prices) / len(prices)" in diff.inner_text()
    assert "len(prices)" in panel.locator(".codeagent-edit").inner_text()
    screenshot(page, "edit-proposed")
    # Accept all: the edit replaces the failed cell, the check cell goes below the panel.
    panel.locator(".codeagent-accept-all").click()
    lab.wait_source(lab.index_of("broken"), FIXED)
    lab.wait_cell_count(len(notebook.cells) + 1)
    notice = panel.locator(".codeagent-notice", has_text="Replaced the source of cell broken")
    notice.wait_for()
    assert "Inserted cell 1 into the notebook" in notice.inner_text()

    # Reject: the second proposal leaves its cell alone.
    model_server.set_script(
        [
            tool_calls(
                ("edit_cell", {"cell_id": "other", "new_source": "print('x')", "reason": "tidy"})
            ),
            text("Proposed."),
        ]
    )
    lab.run_cell("tidy")
    second = page.locator(".codeagent-panel").nth(1)
    second.locator('.codeagent-run-status[data-status="answered"]').wait_for(timeout=90_000)
    second.locator(".codeagent-cell-view .codeagent-reject").first.click()
    second.locator(".codeagent-reject", has_text="Rejected").wait_for()

    # A cell the user changed after the agent read it is not overwritten: the edit goes in
    # a new cell below it, with a note.
    model_server.set_script(
        [
            tool_calls(("edit_cell", {"cell_id": "data", "new_source": "p = 1", "reason": "r"})),
            text("Proposed."),
        ]
    )
    lab.run_cell("tweak")
    third = page.locator(".codeagent-panel").nth(2)
    third.locator('.codeagent-run-status[data-status="answered"]').wait_for(timeout=90_000)
    edit_data = "panel.content.model.sharedModel.cells[arg[0]].setSource(arg[1]);"
    lab._js(edit_data, [lab.index_of("data"), DATA_EDITED])  # the user edits the cell
    third.locator(".codeagent-cell-view .codeagent-accept").first.click()
    third.locator(".codeagent-notice", has_text="changed since the agent read it").wait_for()
    lab.save()

    cells = lab.read_saved(root).cells
    saved = {c.id: c for c in cells}
    sources = [c.source for c in notebook.cells]
    assert [c.source for c in cells] == [
        LOAD,
        DATA_EDITED,
        STALE,
        FIXED,
        *sources[3:5],
        CHECK,
        *sources[5:],
    ]
    fixed = saved["broken"]
    assert fixed.source == FIXED and fixed.outputs == [] and fixed.execution_count is None
    session_id = panel.locator(".widget-html code").first.inner_text().strip()
    events = session_detail(base_url, token, session_id)["events"]
    check, finished = [e for e in events if e["type"] == "tool_call_finished"]
    assert fixed.metadata["codeagent"]["tool_call_id"] == finished["tool_call_id"]
    assert fixed.metadata["codeagent"]["session_id"] == session_id
    assert fixed.metadata["codeagent"]["edit_reason"].startswith("`count` is not defined")
    decided = {e["cell_id"]: e["accepted"] for e in events if e["type"] == "cell_decision"}
    assert decided == {check["tool_call_id"]: True, finished["tool_call_id"]: True}
    assert saved["other"].source == OTHER and saved["data"].source == DATA_EDITED
    assert saved["data"].outputs  # the untouched cells keep their outputs
    screenshot(page, "edit-accepted")
