"""The attack, run for real: a sandbox cell prints script-carrying HTML and SVG into the panel.

JupyterLab, the server extension, a sandbox kernel and headless Chromium are real; only the
model is scripted. Its cell displays a table together with payloads that, if they ever ran,
would push a marker into ``window.__pwned`` (with the page's Jupyter origin and token, they
could as well run code in the user's kernels). The panel must show the table, the SVG
(as an image) and the model's answer, and no ``panel-*`` marker may appear.

The harness proves it can see an execution: the same payloads set into a plain element's
``innerHTML`` in the same page (what the panel used to do) push their ``control-*`` markers.
Those are inserted after the panel rendered, so by the time they have fired, the panel's
payloads had every chance to fire first.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

import codeagent_jupyter
from tests.e2e.browser import conftest as browser
from tests.e2e.browser.lab import LabPage
from tests.scripted_model import ScriptedModelServer, text, tool_calls
from tests.server.helpers import EXTENSION

# The browser area's fixtures, shared by name (a conftest applies only below its folder).
artifacts_dir = browser.artifacts_dir
lab_env = browser.lab_env
jupyterlab_server = browser.jupyterlab_server
chromium = browser.chromium
screenshot = browser.screenshot
browser_page = browser.browser_page

_missing = browser._browser_missing()
pytestmark = [pytest.mark.browser]
if _missing and os.environ.get("CODEAGENT_BROWSER_TESTS") != "required":
    pytestmark.append(pytest.mark.skip(reason=_missing))

LOAD = "%load_ext " + (
    "codeagent_jupyter"
    if hasattr(codeagent_jupyter, "load_ipython_extension")
    else "codeagent_jupyter.widget"
)
NOTEBOOK = "hostile.ipynb"


def mark(tag: str, target: str = "window") -> str:
    """JavaScript that records that the payload ``tag`` ran."""
    return f"({target}.__pwned={target}.__pwned||[]).push('{tag}')"


def html_payloads(who: str) -> dict[str, str]:
    """Payloads for a ``text/html`` output, each with its own marker ``<who>-<name>``."""
    frame = mark(f"{who}-iframe", "parent").replace("'", "&#39;")
    return {
        "img": f'<img src=x onerror="{mark(who + "-img")}">',
        "script": f"<script>{mark(who + '-script')}</script>",
        "details": f'<details open ontoggle="{mark(who + "-details")}">s</details>',
        "iframe": f'<iframe srcdoc="&lt;script&gt;{frame}&lt;/script&gt;"></iframe>',
        "svg": (
            f'<svg onload="{mark(who + "-svg-onload")}"><script>{mark(who + "-svg-script")}'
            f'</script><foreignObject><img src=x onerror="{mark(who + "-fo")}">'
            "</foreignObject></svg>"
        ),
        "link": f'<a class="evil-link" href="javascript:{mark(who + "-link")}">evil link</a>',
    }


def svg_document(who: str) -> str:
    """An ``image/svg+xml`` output with an onload handler, a script and a foreignObject."""
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="60" height="40" '
        f'onload="{mark(who + "-svgdoc-onload")}"><script>{mark(who + "-svgdoc-script")}'
        '</script><foreignObject width="10" height="10"><img xmlns="http://www.w3.org/1999/xhtml" '
        f'src="x" onerror="{mark(who + "-svgdoc-fo")}"/></foreignObject>'
        '<rect width="60" height="40" fill="#1a73e8"/></svg>'
    )


TABLE = (
    '<table border="1" class="dataframe"><thead><tr style="text-align: right;">'
    "<th></th><th>month</th><th>revenue</th></tr></thead><tbody>"
    "<tr><th>0</th><td>Jan</td><td>120</td></tr>"
    "<tr><th>1</th><td>Feb</td><td>180</td></tr></tbody></table>"
)
HOSTILE_HTML = TABLE + "".join(html_payloads("panel").values())
CELL = (
    "from IPython.display import display\n"
    f"display({{'text/html': {HOSTILE_HTML!r}, 'text/plain': 'table'}}, raw=True)\n"
    f"display({{'image/svg+xml': {svg_document('panel')!r}, 'text/plain': 'svg'}}, raw=True)\n"
    f"print({html_payloads('panel-stdout')['img']!r})"
)
ANSWER = f'Revenue rose to **180**. <img src=x onerror="{mark("panel-answer")}">'
# What used to reach innerHTML unchanged, and fires when it does.
CONTROLS = [
    *(html_payloads("control")[name] for name in ("img", "details", "iframe", "svg")),
    svg_document("control"),
]
CONTROL_MARKERS = {"control-img", "control-details", "control-iframe", "control-fo"}
CONTROL_MARKERS.add("control-svgdoc-fo")


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer([]).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def lab_config(model_server: ScriptedModelServer) -> dict[str, Any]:
    extensions = {EXTENSION: True}
    if EXTENSION != "codeagent_jupyter":
        extensions["codeagent_jupyter"] = False
    return {
        "ServerApp": {"jpserver_extensions": extensions},
        "CodeAgent": {
            "model": "scripted",
            "base_url": model_server.url,
            "api_key": "sk-browser-test",
            "pool_size": 1,
            "limits": {"cell_timeout": 60, "memory_mb": 1024},
        },
    }


def test_sandbox_html_never_runs_in_the_panel(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    model_server: ScriptedModelServer,
) -> None:
    base_url, token, root = jupyterlab_server
    model_server.set_script([tool_calls(("run_cell", {"code": CELL})), text(ANSWER)])
    notebook = new_notebook(
        cells=[new_code_cell(LOAD, id="load"), new_code_cell("%agent show the table", id="agent")],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    nbformat.write(notebook, root / NOTEBOOK)
    page = browser_page
    lab = LabPage(page, base_url, token)
    lab.open_notebook(NOTEBOOK)
    lab.run_cell("load")
    lab.run_cell("agent")

    panel = page.locator(".codeagent-panel").first
    panel.locator('.codeagent-run-status[data-status="answered"]').wait_for(timeout=120_000)
    outputs = panel.locator(".codeagent-outputs")
    table = outputs.locator("table")
    table.wait_for()
    assert "Feb" in table.inner_text() and "180" in table.inner_text()
    assert table.locator("tr").count() == 3
    answer = panel.locator(".codeagent-answer")
    assert "<img src=x onerror=" in answer.inner_text()  # the model's HTML shown as text
    assert answer.locator("strong").inner_text() == "180"
    panel.locator("a", has_text="evil link").click()  # a javascript: URL would run now

    # The harness detects execution: the same payloads fire in a plain element.
    page.evaluate(
        "(html) => { const d = document.createElement('div');"
        " document.body.appendChild(d); d.innerHTML = html; }",
        "".join(CONTROLS),
    )
    page.wait_for_function(
        "(want) => want.every(m => (window.__pwned || []).includes(m))",
        arg=sorted(CONTROL_MARKERS),
        timeout=15_000,
    )
    fired = page.evaluate("window.__pwned || []")
    assert [m for m in fired if not m.startswith("control-")] == []

    # What is on screen is inert: SVG as an image, no live elements or handlers.
    svg = outputs.locator('img.codeagent-plot[src^="data:image/svg+xml;base64,"]')
    loaded = "(img) => img.complete && img.naturalWidth === 60"  # the picture really shows
    page.wait_for_function(loaded, arg=svg.element_handle())
    assert "onerror" in outputs.locator("pre").first.inner_text()  # stdout shown as text
    live = panel.locator(
        ".codeagent-outputs :is(script, iframe, svg, foreignObject, [onerror], [onload]),"
        " .codeagent-answer :is(img, script, [onerror])"
    )
    assert live.count() == 0
    panel.scroll_into_view_if_needed()
    screenshot(page, "panel")  # the artifacts folder: the table and picture as the user sees them
