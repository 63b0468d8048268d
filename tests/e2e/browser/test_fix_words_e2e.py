"""Fix sessions and commands in the user's words, in JupyterLab (headless Chromium, the built
labextension, real sandboxes, the scripted model).

The error's "Fix with codeagent" button inserts ``%agent fix In[n]``, not a cell id; the
panel heads the session with "Fix In [n]" and the error's last line (the prompt generated for
the model folded under it); the edit's header and diff and the session list name the cell as
the notebook shows it; a tall table scrolls with the timeline (one vertical scrollbar) and no
faded Stop stays. The palette's "new panel" loads the extension only when the kernel has not,
and "side panel and sessions" opens a side panel without a cell. Screenshots (light and dark)
go to the artifacts folder (docs/testing.md).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nbformat.v4 import new_code_cell

from tests.e2e.browser.lab import LabPage
from tests.e2e.browser.test_first_hour_e2e import api, session_of, shown, status, write
from tests.e2e.browser.test_panel_hour_e2e import _set_theme
from tests.scripted_model import ScriptedModelServer, text, tool_calls
from tests.server.helpers import EXTENSION

DATA = "prices = [1, 2, 3]"
BROKEN = "total = sum(prices) / count\nprint(total)"
FIXED = "total = sum(prices) / len(prices)\nprint(total)"
FIX_CELL = re.compile(r"edit_cell on cell_id '([^']+)'")
TITLE = "Fix In [2]: NameError: name 'count' is not defined"


TABLE = (
    "from IPython.display import HTML, display\n"
    "rows = ''.join(f'<tr><td>{i}</td><td>{i * i}</td></tr>' for i in range(16))\n"
    "display(HTML(f'<table><tr><th>n</th><th>square</th></tr>{rows}</table>'))"
)
"""A table taller than the old 360-pixel box the panel put HTML outputs in."""
NESTED_SCROLL_JS = """
(panel) => [...panel.querySelectorAll('*')].filter(e => {
  const style = getComputedStyle(e);
  return ['auto', 'scroll'].includes(style.overflowY) && e.scrollHeight > e.clientHeight + 1
    && !e.classList.contains('codeagent-timeline');
}).map(e => `${e.className}: ${e.scrollHeight} > ${e.clientHeight}`)
"""
"""Elements of the panel that scroll vertically inside it, besides its one timeline."""


def script(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """A fix request looks at a table, then proposes the fix of the cell it names; anything
    else is answered."""
    last = messages[-1]
    named = FIX_CELL.search(json.dumps(messages[:2]))
    if last["role"] == "tool":
        if "Proposed an edit" in last["content"] or not named:
            return text("Divide by the number of prices.")
        edit = {"cell_id": named.group(1), "new_source": FIXED, "reason": "`count` is unset"}
        return tool_calls(("edit_cell", edit))
    if named:
        return tool_calls(("run_cell", {"code": TABLE}))
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
            "limits": {"cell_timeout": 120, "memory_mb": 1024},
        },
    }


def test_fix_session_names_the_cell_as_the_user_sees_it(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    artifacts_dir: Path,
) -> None:
    base_url, token, root = jupyterlab_server
    write(root, "words.ipynb", [new_code_cell(DATA, id="data"), new_code_cell(BROKEN, id="broken")])
    page = browser_page
    lab = LabPage(page, base_url, token)
    lab.open_notebook("words.ipynb")
    page.set_viewport_size({"width": 1280, "height": 1800})
    lab.run_cell("data")
    lab.run_cell("broken")  # In [2], before the extension is loaded

    # The button inserts the cell by its number; the kernel reads it from the notebook.
    button = shown(lab).locator(".codeagent-fix-button")
    button.wait_for(timeout=30_000)
    button.click()
    lab.wait_cell_count(3)
    assert lab.cells()[2]["source"] == "%load_ext codeagent_jupyter\n%agent fix In[2]"
    panel = shown(lab).locator(".codeagent-panel").first
    panel.locator(status("answered")).wait_for(timeout=90_000)

    # One vertical scroller: the table scrolls with the timeline, not in a box of its own.
    assert panel.locator(".codeagent-html table tr").count() == 17
    assert page.evaluate(NESTED_SCROLL_JS, panel.element_handle()) == []
    assert panel.locator(".codeagent-stop").is_hidden()  # no faded Stop after the run

    request = panel.locator(".codeagent-request")
    assert request.locator(".codeagent-request-title").inner_text() == "Fix In [2]"
    error = request.locator(".codeagent-request-error").inner_text()
    assert error == "NameError: name 'count' is not defined"
    folded = request.locator(".codeagent-request-prompt")
    assert folded.get_attribute("open") is None  # the generated prompt is there, folded
    assert "Propose the fix" not in request.inner_text()
    assert "Edit of your cell In [2]" in panel.locator(".codeagent-edit").inner_text()
    diff = panel.locator(".codeagent-diff").inner_text()
    assert diff.startswith("--- In [2]\n+++ In [2] (proposed)") and "broken" not in diff
    assert "+total = sum(prices) / len(prices)" in diff
    sid = session_of(panel)
    detail = api(base_url, token, f"sessions/{sid}")
    assert detail["title"] == TITLE
    assert "edit_cell on cell_id 'broken'" in detail["prompt"]  # kept for the model and replay

    # The session list names it as the user would.
    panel.locator(".codeagent-sessions .jupyter-widget-Collapse-header").click()
    row = panel.locator(f'.codeagent-session-row[data-session="{sid}"]')
    row.wait_for(timeout=30_000)
    assert TITLE in row.inner_text() and "cell id" not in row.inner_text()
    panel.scroll_into_view_if_needed()
    panel.screenshot(path=str(artifacts_dir / "fix-session-light.png"))
    _set_theme(lab, "JupyterLab Dark")
    panel.screenshot(path=str(artifacts_dir / "fix-session-dark.png"))
    _set_theme(lab, "JupyterLab Light")

    # The palette's new panel: the kernel has the extension, so no second %load_ext.
    lab.select_cell("broken")
    lab.run_from_palette("Code Agent: new panel")
    lab.wait_cell_count(4)
    lab.wait_source(lab.index_of_active(), "%agent ")

    # A side panel with the session list, without typing a cell.
    lab.run_from_palette("Code Agent: side panel and sessions")
    side = page.locator("#jp-right-stack .codeagent-panel").first
    listed = side.locator(f'.codeagent-session-row[data-session="{sid}"]')
    listed.wait_for(timeout=60_000)
    assert TITLE in listed.inner_text()
    assert len(lab.cells()) == 4  # nothing was added to the notebook
    screenshot(page, "side-panel-command")
