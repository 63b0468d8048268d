"""@-mentions in JupyterLab (headless Chromium, the built labextension, real sandboxes, the
scripted model): ``%agent`` with ``@df @data.csv @In[3]`` copies the variable from the
user's kernel, and the model's first request holds the file's text and the cell with its
output."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nbformat.v4 import new_code_cell

from tests.e2e.browser.lab import LabPage
from tests.e2e.browser.test_first_hour_e2e import shown, status, write
from tests.scripted_model import ScriptedModelServer, text
from tests.server.helpers import EXTENSION

FRAME = "import pandas as pd\ndf = pd.DataFrame({'month': [1, 2], 'revenue': [10, 32]})"
TOTAL = "print('total revenue', df.revenue.sum())"


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer(lambda _messages: text("Seen.")).start()
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


def test_agent_with_a_variable_a_file_and_a_cell_mentioned(
    jupyterlab_server: tuple[str, str, Path],
    browser_page: Any,
    model_server: ScriptedModelServer,
) -> None:
    base_url, token, root = jupyterlab_server
    (root / "data.csv").write_text("month,target\n1,12\n2,30\n")
    cells = [
        new_code_cell("x = 1", id="one"),
        new_code_cell(FRAME, id="frame"),
        new_code_cell(TOTAL, id="total"),  # In [3]
        new_code_cell(
            "%load_ext codeagent_jupyter\n%agent compare @df with @data.csv as @In[3] does",
            id="ask",
        ),
    ]
    write(root, "mentions.ipynb", cells)
    lab = LabPage(browser_page, base_url, token)
    lab.open_notebook("mentions.ipynb")
    for cell_id in ("one", "frame", "total", "ask"):
        lab.run_cell(cell_id)
    panel = shown(lab).locator(".codeagent-panel").first
    try:
        panel.locator(status("answered")).wait_for(timeout=120_000)
    except Exception:
        print("PANEL:", panel.inner_text(), "CELLS:", lab.cells())
        raise

    first = json.dumps(model_server.requests[0]["messages"])
    assert "Variables copied from the user's kernel" in first and "df" in first
    assert "The variable df, copied into your sandbox" in first
    assert "month,target\\n1,12\\n2,30" in first  # @data.csv
    assert "df.revenue.sum()" in first and "total revenue 42" in first  # @In[3] and its output
    # The panel shows the request as typed, not the files it brought.
    assert "month,target" not in panel.locator(".codeagent-request").inner_text()
