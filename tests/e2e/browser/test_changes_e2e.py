"""The panel's Changes section in JupyterLab: headless Chromium, the scripted model.

A session cleans a CSV into a new one, edits ``report.py`` twice, saves a chart as PNG and
writes a notebook. When it ends the panel lists the four files, each folded with its
summary line; opened, the script shows its coloured diff (readable in the dark theme too),
the chart a thumbnail. "Revert this file" puts ``report.py`` back byte for byte and the
section drops it. Screenshots (light and dark) go to test-artifacts/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from tests.e2e.browser.lab import LabPage
from tests.e2e.browser.test_panel_e2e import LOAD
from tests.e2e.browser.test_panel_hour_e2e import _CONTRAST_JS, _set_theme
from tests.scripted_model import ScriptedModelServer, text, tool_calls
from tests.server.helpers import EXTENSION

pytestmark = pytest.mark.timeout(900)
"""A JupyterLab server, a session of four steps and two themes: minutes on a loaded machine."""

NOTEBOOK = "changes.ipynb"
REPORT = b'import pandas as pd\n\ndf = pd.read_csv("raw.csv")\nprint(df.describe())\n'
REPORT_V2 = 'import pandas as pd\n\ndf = pd.read_csv("clean.csv")\nprint(df.describe())\n'
CLEAN = (
    "import pandas as pd\n"
    "df = pd.read_csv('raw.csv').dropna()\n"
    "df.to_csv('clean.csv', index=False)\nlen(df)"
)
EDIT_AND_PLOT = (
    "src = open('report.py').read().replace('df.describe()', 'df.sum()')\n"
    "open('report.py', 'w').write(src + 'print(len(df))\\n')\n"
    "import matplotlib.pyplot as plt\n"
    "plt.figure(figsize=(4, 2.5), dpi=60)\n"
    "plt.bar(['north', 'south', 'east'], [120, 180, 150], color='tab:blue')\n"
    "plt.title('Totals by region')\nplt.savefig('totals.png')"
)
SUMMARY_NB = (
    "import nbformat\nfrom nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell\n"
    "nbformat.write(new_notebook(cells=[new_markdown_cell('# Totals'), "
    "new_code_cell(\"df = pd.read_csv('clean.csv')\")]), 'summary.ipynb')"
)


@pytest.fixture(scope="module")
def lab_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
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


def test_changes_section_and_revert(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    screenshot: Any,
    model_server: ScriptedModelServer,
    artifacts_dir: Path,
) -> None:
    base_url, token, root = jupyterlab_server
    rows = [f"{region},{amount}" for region, amount in (("north", 120), ("south", ""))]
    rows += [f"east,{150 + i}" for i in range(56)]
    (root / "raw.csv").write_text("region,amount\n" + "\n".join(rows) + "\n")
    (root / "report.py").write_bytes(REPORT)
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    cells = [new_code_cell(LOAD, id="load"), new_code_cell("%agent tidy the sales", id="agent")]
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": kernelspec}), root / NOTEBOOK)
    model_server.set_script(
        [
            tool_calls(("run_cell", {"code": CLEAN})),
            tool_calls(("write_file", {"path": "report.py", "content": REPORT_V2})),
            tool_calls(("run_cell", {"code": EDIT_AND_PLOT})),
            tool_calls(("run_cell", {"code": SUMMARY_NB})),
            text("Cleaned the sales, updated the report and drew the totals."),
        ]
    )
    page = browser_page
    lab = LabPage(page, base_url, token)
    lab.open_notebook(NOTEBOOK)
    lab.execute_command("application:toggle-left-area")
    page.set_viewport_size({"width": 1280, "height": 1400})
    lab.run_cell("load")
    lab.run_cell("agent")
    panel = page.locator(".codeagent-panel").first
    panel.locator('.codeagent-run-status[data-status="answered"]').wait_for(timeout=180_000)

    section = panel.locator(".codeagent-changes")
    section.locator(".codeagent-change").nth(3).wait_for(timeout=60_000)
    paths = [d.get_attribute("data-path") for d in section.locator(".codeagent-change").all()]
    assert paths == ["clean.csv", "report.py", "summary.ipynb", "totals.png"]  # not changes.ipynb
    title = section.locator(".codeagent-changes-title").inner_text()
    assert "4 files changed" in title
    summaries = section.locator(".codeagent-change > summary").all_inner_texts()
    assert summaries == [
        "clean.csv (new, 57 rows)",
        "report.py (+3 \u22122)",
        "summary.ipynb (new, 2 cells)",
        "totals.png (new)",
    ]
    report = section.locator('.codeagent-change[data-path="report.py"]')
    assert not report.get_attribute("open")  # folded until opened
    report.locator("summary").click()
    diff = report.locator(".codeagent-diff")
    diff.wait_for()
    assert "+print(df.sum())" in diff.inner_text()
    chart = section.locator('.codeagent-change[data-path="totals.png"]')
    chart.locator("summary").click()
    thumbnail = chart.locator("img.codeagent-thumbnail")
    thumbnail.wait_for()
    assert thumbnail.evaluate("img => img.naturalWidth") == 240
    assert "PNG image, 240\u00d7150" in chart.inner_text()
    section.locator('.codeagent-change[data-path="summary.ipynb"] summary').click()
    section.scroll_into_view_if_needed()
    screenshot(page, "light")
    panel.screenshot(path=str(artifacts_dir / "changes-panel-light.png"))

    _set_theme(lab, "JupyterLab Dark")
    measured = page.evaluate(_CONTRAST_JS, ".codeagent-changes")
    assert measured["count"] > 0
    assert measured["lowest"][0]["ratio"] >= 4.5, measured["lowest"]
    panel.screenshot(path=str(artifacts_dir / "changes-panel-dark.png"))
    screenshot(page, "dark")
    _set_theme(lab, "JupyterLab Light")

    # Revert this file: report.py is back byte for byte and leaves the list.
    has_report = page.locator('.codeagent-change[data-path="report.py"]')
    row = section.locator(".codeagent-change-row", has=has_report)
    row.locator(".codeagent-revert").click()
    panel.locator(".codeagent-notice", has_text="Reverted report.py").wait_for(timeout=30_000)
    assert (root / "report.py").read_bytes() == REPORT
    section.locator('.codeagent-change[data-path="report.py"]').wait_for(state="detached")
    assert section.locator(".codeagent-change").count() == 3
    assert "reverted: report.py" in section.inner_text()
    screenshot(page, "reverted")

    # A file the user changed since: the panel asks in its own words, then reverts anyway.
    (root / "clean.csv").write_text("region,amount\nmine,1\n")
    has_clean = page.locator('.codeagent-change[data-path="clean.csv"]')
    clean = section.locator(".codeagent-change-row", has=has_clean).locator(".codeagent-revert")
    clean.click()
    asked = panel.locator(".codeagent-notice", has_text="clean.csv changed since")
    asked.wait_for(timeout=30_000)
    assert asked.inner_text().endswith("— Revert anyway?")
    assert "force" not in asked.inner_text() and "409" not in asked.inner_text()
    assert clean.inner_text().strip() == "Revert anyway"
    assert (root / "clean.csv").exists()
    clean.click()
    panel.locator(".codeagent-notice", has_text="Reverted clean.csv").wait_for(timeout=30_000)
    assert not (root / "clean.csv").exists()
