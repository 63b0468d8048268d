"""The panel in a data scientist's first hour: JupyterLab, headless Chromium, the scripted model.

One run with everything a session shows (a plan, a ``--with`` variable, preloaded ``pd``/
``np``/``plt``, a long output, a traceback, a wide DataFrame, an edit of a user's cell, a
Markdown table in the answer), then what the user does with it: reads it in the dark theme
(contrast measured on code, diff and traceback; also in the
high-contrast and light themes), Accept and run, Accept all, saves (the saved
notebook carries a static summary, read with nbformat), restarts the kernel (the old panel
says it is disconnected) and runs everything in the fresh kernel with no error.

A second test puts panels in JupyterLab's right sidebar (``%agent --side``, then the
``AgentMagics.side`` setting) and drives their session list: Refresh, Delete, Open.
"""

from __future__ import annotations

import html
import json
import re
import time
import urllib.request
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.e2e.browser.lab import LabPage
from tests.e2e.browser.test_panel_e2e import LOAD, session_detail
from tests.scripted_model import ScriptedModelServer, delay, text, tool_calls
from tests.server.helpers import EXTENSION

NOTEBOOK = "hour.ipynb"
SALES = "sales = {'month': ['Jan', 'Feb', 'Mar'], 'revenue': [120, 180, 150]}"
SALES_EDITED = "sales = {'month': ['Jan', 'Feb', 'Mar', 'Apr'], 'revenue': [120, 180, 150, 210]}"
FRAME = "df = pd.DataFrame(sales)\nprint(df['revenue'].mean())"
WIDE = (
    "wide = pd.DataFrame(np.arange(60).reshape(2, 30), "
    "columns=[f'column_{i}' for i in range(30)])\nwide"
)
BROKEN = "df['profit'].sum()"
LONG = "for i in range(5000):\n    print('line', i)"
PLOT = "plt.figure(figsize=(4, 2))\nplt.plot(df['month'], df['revenue'])\nplt.show()"
ANSWER = "Revenue by month:\n\n| month | revenue |\n|---|---|\n| Jan | 120 |\n| Feb | 180 |"
PLAN = {"steps": [{"step": "Load the sales", "status": "done"}, {"step": "Plot", "status": "done"}]}

# WCAG contrast of every visible text node under `selector` against its composited
# background (semi-transparent backgrounds blended up the ancestors); the lowest few.
_CONTRAST_JS = """
(selector) => {
  const parse = (c) => { const m = c.match(/[\\d.]+/g) || [0, 0, 0, 0];
    return [+m[0], +m[1], +m[2], m.length > 3 ? +m[3] : 1]; };
  const over = (top, bottom) => { const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)).concat([1]); };
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    let color = [255, 255, 255, 1];
    for (const layer of layers.reverse()) color = over(layer, color);
    return color;
  };
  const lum = (c) => { const [r, g, b] = c.slice(0, 3).map(v => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const results = [];
  for (const root of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const el = node.parentElement;
      if (!node.textContent.trim() || !el.getClientRects().length) continue;
      const bg = background(el);
      const fg = over(parse(getComputedStyle(el).color), bg);
      const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
      results.push({ratio: (hi + 0.05) / (lo + 0.05), text: node.textContent.slice(0, 30),
                    color: getComputedStyle(el).color, background: `rgb(${bg.slice(0, 3)})`});
    }
  }
  results.sort((a, b) => a.ratio - b.ratio);
  return {count: results.length, lowest: results.slice(0, 5)};
}
"""

# Elements of the panel that scroll sideways although nothing in them is wider than the
# panel (the DataFrame's own wrapper may scroll: its table is wider).
_STRAY_SCROLL_JS = """
(panel) => [...panel.querySelectorAll('*')].filter(e => {
  const style = getComputedStyle(e);
  return ['auto', 'scroll'].includes(style.overflowX) && e.scrollWidth > e.clientWidth + 1
    && !e.classList.contains('codeagent-html');
}).map(e => `${e.className}: ${e.scrollWidth} > ${e.clientWidth}`)
"""


@pytest.fixture(scope="module")
def lab_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Session notebooks go to a temporary data dir, never the user's."""
    return {"JUPYTER_DATA_DIR": str(tmp_path_factory.mktemp("jupyter-data"))}


@pytest.fixture(scope="module")
def lab_config(model_server: ScriptedModelServer) -> dict[str, Any]:
    return {
        "ServerApp": {"jpserver_extensions": {EXTENSION: True}},
        "CodeAgent": {
            "model": "scripted",
            "base_url": model_server.url,
            "api_key": "sk-browser-test",
            "pool_size": 1,
            "limits": {"cell_timeout": 120, "memory_mb": 1024},
        },
    }


def _notebook(root: Path, name: str, cells: list[Any]) -> None:
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": kernelspec}), root / name)


def _set_theme(lab: LabPage, theme: str) -> None:
    lab.execute_command("apputils:change-theme", {"theme": theme})
    light = "true" if "Light" in theme else "false"
    lab.page.wait_for_function(f"() => document.body.dataset.jpThemeLight === '{light}'")
    lab.page.wait_for_timeout(500)  # the theme's stylesheet applies after the flag


def _errors(cells: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (c["source"][:40], f"{o.get('ename')}: {o.get('evalue')}")
        for c in cells
        if c["cell_type"] == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]


def _summary_saved(lab: LabPage, root: Path, cell_id: str, needle: str) -> str:
    """Save until the cell's saved output carries a text/html summary containing
    ``needle`` (the summary is updated when the run ends); that HTML."""
    deadline = time.monotonic() + 60
    html = ""
    while time.monotonic() < deadline:
        lab.save()
        cell = next(c for c in lab.read_saved(root).cells if c.id == cell_id)
        html = "".join(o.get("data", {}).get("text/html", "") for o in cell.outputs)
        if needle in html:
            return html
        time.sleep(1)
    raise AssertionError(f"no saved summary with {needle!r}: {html[:500]}")


def test_first_hour_in_one_notebook(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    model_server: ScriptedModelServer,
) -> None:
    base_url, token, root = jupyterlab_server
    _notebook(
        root,
        NOTEBOOK,
        [
            new_code_cell(LOAD, id="load"),
            new_code_cell(SALES, id="data"),
            new_code_cell("%agent --with sales summarise revenue", id="agent"),
        ],
    )
    model_server.set_script(
        [
            tool_calls(("update_plan", PLAN)),
            tool_calls(("run_cell", {"code": FRAME})),
            tool_calls(("run_cell", {"code": WIDE})),
            tool_calls(("run_cell", {"code": BROKEN})),
            tool_calls(("run_cell", {"code": LONG})),
            tool_calls(("run_cell", {"code": PLOT})),
            tool_calls(
                ("edit_cell", {"cell_id": "data", "new_source": SALES_EDITED, "reason": "April."})
            ),
            delay(1.0, text(ANSWER)),
        ]
    )
    page = browser_page
    lab = LabPage(page, base_url, token)
    lab.open_notebook(NOTEBOOK)
    lab.execute_command("application:toggle-left-area")
    lab.run_cell("load")
    lab.run_cell("data")
    lab.run_cell("agent")
    panel = page.locator(".codeagent-panel").first
    panel.locator('.codeagent-run-status[data-status="answered"]').wait_for(timeout=120_000)
    session_id = panel.locator(".widget-html code").first.inner_text().strip()

    # Height-bounded, long output and traceback folded, Stop in the header, table rendered.
    height = panel.bounding_box()["height"]
    assert height < page.viewport_size["height"], f"the panel is {height:.0f} px tall"
    folds = panel.locator("details.codeagent-fold")
    assert folds.count() >= 2 and all(not f.get_attribute("open") for f in folds.all())
    assert "earlier lines" in panel.locator('.codeagent-cell[data-cell="4"]').inner_text()
    assert "KeyError: 'profit'" in panel.locator(".codeagent-traceback").inner_text()
    assert panel.locator(".codeagent-header .codeagent-stop").count() == 1
    assert panel.locator(".codeagent-answer table td", has_text="180").count() == 1
    assert "In [2]" in panel.locator(".codeagent-edit").inner_text()  # not the cell's UUID
    assert page.evaluate(_STRAY_SCROLL_JS, panel.element_handle()) == []
    wide = panel.locator(".codeagent-cell-view").nth(1)
    caption = wide.get_by_text("2 rows \u00d7 30 columns")
    caption.scroll_into_view_if_needed()
    buttons = wide.locator(".codeagent-accept").bounding_box()
    assert caption.bounding_box()["y"] + caption.bounding_box()["height"] <= buttons["y"]
    screenshot(page, "light")

    for theme in ("JupyterLab Dark", "JupyterLab Dark High Contrast", "JupyterLab Light"):
        _set_theme(lab, theme)
        for selector in (".codeagent-code", ".codeagent-diff", ".codeagent-traceback"):
            measured = page.evaluate(_CONTRAST_JS, f".codeagent-panel {selector}")
            assert measured["count"] > 0, selector
            assert measured["lowest"][0]["ratio"] >= 4.5, (theme, selector, measured["lowest"])
        if theme == "JupyterLab Dark":
            screenshot(page, "dark")

    # Accept and run the first cell: inserted below the panel and run in this kernel.
    views = panel.locator(".codeagent-cell-view")
    views.nth(0).locator(".codeagent-accept-run").click()
    lab.wait_cell_count(4)
    first = lab.cells()[3]
    assert first["source"].startswith("# uses sales from your kernel")
    assert "import pandas as pd\n" + FRAME in first["source"]
    lab._wait(
        "panel.content.model.sharedModel.cells[3].execution_count != null"
        " && panel.sessionContext.session?.kernel?.status === 'idle'",
        timeout=60_000,
    )
    assert "150.0" in json.dumps(lab.cells()[3]["outputs"])
    views.nth(3).locator(".codeagent-reject").click()  # the 5,000 lines stay in the panel
    panel.locator(".codeagent-reject", has_text="Rejected").wait_for()
    panel.locator(".codeagent-accept-all").click()
    panel.locator(".codeagent-notice", has_text="Replaced the source of cell data").wait_for()
    lab.wait_cell_count(6)

    saved = _summary_saved(lab, root, "agent", "Revenue by month")
    notebook = lab.read_saved(root)
    output = next(c for c in notebook.cells if c.id == "agent").outputs[0]
    assert "application/vnd.jupyter.widget-view+json" in output.data  # the live panel too
    words = html.unescape(re.sub(r"<[^>]+>", "", saved))
    for shown in ("Load the sales", "df = pd.DataFrame(sales)", "Revenue by month", session_id):
        assert shown in words, shown
    assert "<table" in saved and "<details" in saved
    assert "<script" not in saved and "<style" not in saved

    # A kernel restart: the old panel says so, and how to get the session back.
    lab._js("await panel.sessionContext.restartKernel();")
    lab.wait_kernel_idle(timeout=60_000)
    dead = panel.locator(".codeagent-dead")
    dead.wait_for(state="visible", timeout=30_000)
    assert f"%agent --attach {session_id}" in dead.inner_text()
    screenshot(page, "restarted")

    # Run All in the fresh kernel: every accepted cell runs as it ran in the sandbox.
    model_server.set_script([text("again")] * 3)
    lab.execute_command("notebook:run-all-cells")
    lab._wait(
        "panel.content.model.sharedModel.cells.every("
        "c => c.cell_type !== 'code' || c.execution_count != null)"
        " && panel.sessionContext.session?.kernel?.status === 'idle'",
        timeout=180_000,
    )
    cells = lab.cells()
    assert [c["source"] for c in cells][1] == SALES_EDITED
    assert len(cells) == 6 and _errors(cells) == []
    detail = session_detail(base_url, token, session_id)
    decided = [e for e in detail["events"] if e["type"] == "cell_decision"]
    assert len(decided) == 5  # 4 accepted (one with run, one edit) and 1 rejected
    screenshot(page, "run-all")


def _api(base_url: str, token: str, path: str, method: str = "GET") -> Any:
    request = urllib.request.Request(
        f"{base_url}codeagent/api/{path}",
        method=method,
        headers={"Authorization": f"token {token}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_side_panel_and_session_list(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    model_server: ScriptedModelServer,
) -> None:
    base_url, token, root = jupyterlab_server
    _notebook(
        root,
        "side.ipynb",
        [
            new_code_cell(LOAD, id="load"),
            new_code_cell("%agent say hello inline", id="inline"),
            new_code_cell("%agent --side say hello on the side", id="side"),
            new_code_cell("%config AgentMagics.side = True", id="config"),
            new_code_cell("%agent by default on the side", id="default"),
        ],
    )
    page = browser_page
    lab = LabPage(page, base_url, token)
    lab.open_notebook("side.ipynb")
    lab.run_cell("load")
    model_server.set_script([text("Hello inline.")])
    lab.run_cell("inline")
    inline = page.locator(".jp-Notebook .codeagent-panel").first
    inline.locator('.codeagent-run-status[data-status="answered"]').wait_for(timeout=90_000)
    inline_id = inline.locator(".widget-html code").first.inner_text().strip()

    model_server.set_script([text("Hello from the side.")])
    lab.run_cell("side")
    side = page.locator("#jp-right-stack .codeagent-panel").first
    side.locator('.codeagent-run-status[data-status="answered"]').wait_for(timeout=90_000)
    side_id = side.locator(".widget-html code").first.inner_text().strip()
    cell = next(c for c in lab.cells() if c["id"] == "side")
    assert "right sidebar" in json.dumps(cell["outputs"])  # the cell keeps a summary
    assert page.locator(".jp-Notebook .codeagent-panel").count() == 1  # not in the notebook

    rows = side.locator(".codeagent-session-row")
    rows.first.wait_for(timeout=30_000)
    side.locator(".codeagent-sessions-refresh").click()
    for listed_id in (inline_id, side_id):  # the refreshed list, not the one it replaces
        side.locator(f'.codeagent-session-row[data-session="{listed_id}"]').wait_for()
    listed = {r.get_attribute("data-session"): r.inner_text() for r in rows.all()}
    assert {inline_id, side_id} <= set(listed)
    assert "this panel" in listed[side_id] and "just now" in listed[inline_id]
    assert "say hello inline" in listed[inline_id]
    screenshot(page, "side")

    # Delete: the session is closed on the server, and the list says so.
    row = side.locator(".codeagent-session", has=page.locator(f'[data-session="{inline_id}"]'))
    row.locator(".codeagent-session-delete").click()
    closed = f'.codeagent-session-row[data-session="{inline_id}"][data-state="closed"]'
    side.locator(closed).wait_for(timeout=30_000)
    assert _api(base_url, token, f"sessions/{inline_id}")["state"] == "closed"

    # Open: the (closed) inline session in a second side panel, its events replayed.
    row.locator(".codeagent-session-open").click()
    opened = page.locator("#jp-right-stack .codeagent-panel", has_text="Hello inline.")
    opened.first.wait_for(timeout=30_000)
    screenshot(page, "opened")

    # The setting: every new panel on the side.
    model_server.set_script([text("Side by default.")])
    lab.run_cell("config")
    lab.run_cell("default")
    page.locator("#jp-right-stack .codeagent-panel", has_text="Side by default.").wait_for(
        timeout=90_000
    )
    assert page.locator(".jp-Notebook .codeagent-panel").count() == 1
