"""The second day, in JupyterLab: headless Chromium, the scripted model, a package index on
127.0.0.1.

- A notebook saved, its kernel shut down, reopened: each ``%agent`` output shows the run's
  static summary (never "Error displaying widget: model not found") with its session id,
  and Reattach opens the session again, live, in that cell.
- Side panels follow their kernel: reopening the notebook twice leaves one tab; a kernel
  restart marks the panel "Disconnected" with a Reattach that opens it again.
- The side panel at the sidebar's default width during an install approval: nothing scrolls
  sideways (measured), one set of approval buttons, the cell's stub says it waits.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.e2e.browser.lab import LabPage
from tests.e2e.browser.test_panel_e2e import LOAD
from tests.e2e.browser.test_panel_hour_e2e import _set_theme
from tests.packages.index import Served, served_index
from tests.scripted_model import ScriptedModelServer, text, tool_calls
from tests.server.helpers import EXTENSION

PANEL_MIME = "application/vnd.codeagent.panel+json"
ANSWERED = '.codeagent-run-status[data-status="answered"]'
LIGHT, DARK = "JupyterLab Light", "JupyterLab Dark"

# The right area's tabs that hold a codeagent panel (jupyterlab-sidecar widgets).
_SIDE_TABS_JS = """
() => [...window.jupyterapp.shell.widgets('right')]
  .filter(w => !w.isDisposed && w.node.querySelector('.codeagent-panel')).length
"""

# Elements of the side panel that are wider than their box and may scroll (or clip)
# sideways, and the panel's own overflow; the sidebar's width.
_SIDE_OVERFLOW_JS = """
() => {
  const tab = [...window.jupyterapp.shell.widgets('right')]
    .find(w => !w.isDisposed && w.isVisible && w.node.querySelector('.codeagent-panel'));
  const wide = [...tab.node.querySelectorAll('*')].filter(e => {
    const x = getComputedStyle(e).overflowX;
    return ['auto', 'scroll', 'hidden'].includes(x) && e.scrollWidth > e.clientWidth + 1;
  }).map(e => `${e.className}: ${e.scrollWidth} > ${e.clientWidth}`);
  return {width: tab.node.clientWidth, scroll: tab.node.scrollWidth, wide};
}
"""


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


def _notebook(root: Path, name: str, cells: list[Any]) -> None:
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": kernelspec}), root / name)


def _shot(lab: LabPage, screenshot: Any, name: str) -> None:
    """Screenshots in the light and the dark theme (left in the light one)."""
    for theme, suffix in ((DARK, "dark"), (LIGHT, "light")):
        _set_theme(lab, theme)
        screenshot(lab.page, f"{name}-{suffix}")


def _saved_session(lab: LabPage, root: Path, cell_id: str, session_id: str) -> None:
    """Save until the cell's saved output names the session (updated when the run ends)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        lab.save()
        cell = next(c for c in lab.read_saved(root).cells if c.id == cell_id)
        named = [o.get("data", {}).get(PANEL_MIME, {}) for o in cell.outputs]
        if any(n.get("session_id") == session_id for n in named):
            return
        time.sleep(1)
    raise AssertionError(f"the saved output does not name session {session_id}")


def test_reopened_notebook_shows_the_run_and_reattaches(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    model_server: ScriptedModelServer,
) -> None:
    base_url, token, root = jupyterlab_server
    _notebook(
        root,
        "reopen.ipynb",
        [new_code_cell(LOAD, id="load"), new_code_cell("%agent say hello", id="ask")],
    )
    page = browser_page
    lab = LabPage(page, base_url, token)
    lab.open_notebook("reopen.ipynb")
    lab.run_cell("load")
    model_server.set_script([tool_calls(("run_cell", {"code": "print(6 * 7)"})), text("Hi.")])
    lab.run_cell("ask")
    panel = page.locator(".jp-Notebook .codeagent-panel").first
    panel.locator(ANSWERED).wait_for(timeout=120_000)
    session_id = panel.locator(".widget-html code").first.inner_text().strip()
    _saved_session(lab, root, "ask", session_id)

    # Shut the kernel down, reload the page, open the notebook again: a new kernel.
    lab._js("await panel.sessionContext.shutdown();")
    lab.open_notebook("reopen.ipynb")
    output = page.locator(".jp-Notebook .codeagent-panel-output").first
    output.locator(".codeagent-summary").wait_for(timeout=30_000)
    assert "Hi." in output.inner_text() and "42" in output.text_content()  # a folded cell
    assert output.locator(".codeagent-reattach-bar code").inner_text() == session_id
    assert "model not found" not in page.locator(".jp-Notebook").inner_text()
    reattach = output.locator(".codeagent-reattach")
    page.wait_for_function(
        "() => { const b = document.querySelector('.codeagent-reattach');"
        " return b && !b.disabled; }"
    )
    _shot(lab, screenshot, "reopened")

    # Reattach: the session, live again, in the same cell.
    reattach.click()
    live = page.locator(".jp-Notebook .codeagent-panel").first
    live.locator(ANSWERED).wait_for(timeout=60_000)
    assert live.locator(".widget-html code").first.inner_text().strip() == session_id
    assert "Hi." in live.inner_text()
    assert page.locator(".codeagent-reattach-bar").count() == 0
    cell = next(c for c in lab.cells() if c["id"] == "ask")
    assert cell["source"] == "%agent say hello"  # the user's cell is left as it was
    assert "model not found" not in page.locator(".jp-Notebook").inner_text()

    # A restart: the live panel says it is disconnected, and Reattach is there again.
    lab._js("await panel.sessionContext.restartKernel();")
    lab.wait_kernel_idle(timeout=60_000)
    output.locator(".codeagent-reattach-bar").wait_for(timeout=30_000)
    output.locator(".codeagent-dead").wait_for(state="visible")
    assert output.locator(".codeagent-reattach-bar code").inner_text() == session_id


def test_side_panels_follow_their_kernel(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    model_server: ScriptedModelServer,
) -> None:
    base_url, token, root = jupyterlab_server
    _notebook(
        root,
        "side-reopen.ipynb",
        [new_code_cell(LOAD, id="load"), new_code_cell("%agent --side say hi", id="side")],
    )
    page = browser_page
    lab = LabPage(page, base_url, token)
    lab.open_notebook("side-reopen.ipynb")
    lab.run_cell("load")
    model_server.set_script([text("Hello from the side.")])
    lab.run_cell("side")
    side = page.locator("#jp-right-stack .codeagent-panel").first
    side.locator(ANSWERED).wait_for(timeout=120_000)
    session_id = side.locator(".widget-html code").first.inner_text().strip()
    assert page.evaluate(_SIDE_TABS_JS) == 1

    # Close the notebook (its kernel keeps running) and open it again, twice.
    for _ in range(2):
        lab.save()
        lab._js("panel.close();")
        lab._wait("!panel")
        page.evaluate(
            "async (path) => { await window.jupyterapp.commands.execute('docmanager:open',"
            " {path}); }",
            lab.path,
        )
        lab._wait("panel && panel.context.isReady")
        lab.wait_kernel_idle(timeout=60_000)
        page.wait_for_function(f"() => ({_SIDE_TABS_JS})() >= 1")
        page.wait_for_timeout(2500)  # the side panels are checked every second
        assert page.evaluate(_SIDE_TABS_JS) == 1
    side = page.locator("#jp-right-stack .codeagent-panel").first
    assert page.locator("#jp-right-stack .codeagent-reattach-bar").count() == 0

    # A restart: the side panel says it is disconnected, its buttons say why they are off.
    lab._js("await panel.sessionContext.restartKernel();")
    lab.wait_kernel_idle(timeout=60_000)
    bar = page.locator("#jp-right-stack .codeagent-reattach-bar")
    bar.wait_for(timeout=30_000)
    assert "Disconnected" in bar.inner_text() and session_id in bar.inner_text()
    page.locator("#jp-right-stack .codeagent-dead").first.wait_for(state="visible")
    send = page.locator("#jp-right-stack .codeagent-send").first
    assert send.evaluate("e => getComputedStyle(e).pointerEvents") == "none"
    screenshot(page, "side-disconnected")

    # Reattach: a live side panel on the same session replaces the dead one.
    page.wait_for_function(
        "() => { const b = document.querySelector('#jp-right-stack .codeagent-reattach');"
        " return b && !b.disabled; }"
    )
    bar.locator(".codeagent-reattach").click()
    fresh = page.locator(
        f"#jp-right-stack .codeagent-panel.codeagent-session-{session_id}"
        ":not(.jupyter-widgets-disconnected)"
    )
    fresh.locator(ANSWERED).wait_for(timeout=90_000)
    page.wait_for_function(f"() => ({_SIDE_TABS_JS})() === 1")
    page.wait_for_timeout(2500)
    assert page.locator("#jp-right-stack .codeagent-reattach-bar").count() == 0
    assert "Hello from the side." in fresh.first.inner_text()


def test_side_panel_fits_its_default_width(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    model_server: ScriptedModelServer,
) -> None:
    base_url, token, root = jupyterlab_server
    _notebook(
        root,
        "side-install.ipynb",
        [new_code_cell(LOAD, id="load"), new_code_cell("%agent --side use tinyapp", id="ask")],
    )
    install = {"packages": ["tinyapp"], "reason": "The analysis needs tinyapp."}
    model_server.set_script(
        [tool_calls(("install_packages", install)), text("tinyapp is installed.")]
    )
    page = browser_page
    lab = LabPage(page, base_url, token)
    lab.open_notebook("side-install.ipynb")
    lab.run_cell("load")
    lab.run_cell("ask")
    side = page.locator("#jp-right-stack .codeagent-panel", has_text="use tinyapp").first
    side.locator(".codeagent-install").wait_for(timeout=120_000)

    # The cell's stub says what the run waits for.
    stub = page.locator(".jp-Notebook .codeagent-summary").first
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-Notebook .codeagent-summary')]"
        ".some(e => e.innerText.includes('waiting for your approval'))",
        timeout=30_000,
    )
    assert "ready" not in stub.locator(".codeagent-run-status").inner_text()

    # One set of approval buttons; nothing wider than the sidebar.
    visible = [
        b for b in side.locator(".jupyter-button:has-text('Approve')").all() if b.is_visible()
    ]
    assert len(visible) == 1
    assert side.locator(".codeagent-deny:visible").count() == 1
    measured = page.evaluate(_SIDE_OVERFLOW_JS)
    print(f"side panel width {measured['width']} px, content {measured['scroll']} px")
    assert measured["width"] < 320, measured  # the sidebar's default width, not widened
    assert measured["scroll"] <= measured["width"] + 1, measured
    assert measured["wide"] == [], measured
    rows = side.locator(".codeagent-package").all()
    assert any("tinyapp" in r.inner_text() for r in rows)
    for row in rows:  # no cell of the table cut off at the panel's edge
        box, panel_box = row.bounding_box(), side.bounding_box()
        assert box["x"] + box["width"] <= panel_box["x"] + panel_box["width"] + 1
    _shot(lab, screenshot, "side-approval")

    side.locator(".codeagent-approve").click()
    side.locator(ANSWERED).wait_for(timeout=120_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('.jp-Notebook .codeagent-summary')]"
        ".some(e => !e.innerText.includes('waiting for your approval'))",
        timeout=30_000,
    )
