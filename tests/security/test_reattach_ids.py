"""A saved ``%agent`` output's session id is data, never code, in a real browser.

The attack: Reattach runs ``%agent --attach ID`` in the user's kernel, and ID comes from the
notebook file (the output's ``application/vnd.codeagent.panel+json`` view), which anyone
who shared the notebook wrote. The notebook here is trusted (signed with the server's
own secret, as a notebook the user saved is), so JupyterLab routes the output through the
labextension. One output's id is Python that would create a marker file if it ever reached
the kernel as code; another is well formed but not a session of this server. Neither may
offer Reattach; each shows the summary and its id only as text, and no marker appears.

JupyterLab, the server extension and headless Chromium are real; no model is needed.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbformat.sign import NotebookNotary
from nbformat.v4 import new_code_cell, new_notebook, new_output

from tests.e2e.browser import conftest as browser
from tests.e2e.browser.lab import LabPage
from tests.server.helpers import EXTENSION

artifacts_dir = browser.artifacts_dir
jupyterlab_server = browser.jupyterlab_server
chromium = browser.chromium
screenshot = browser.screenshot
browser_page = browser.browser_page

_missing = browser._browser_missing()
pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]
if _missing and os.environ.get("CODEAGENT_BROWSER_TESTS") != "required":
    pytestmark.append(pytest.mark.skip(reason=_missing))

PANEL_MIME = "application/vnd.codeagent.panel+json"
MARKER = "reattach-pwned"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("jupyter-data")


@pytest.fixture(scope="module")
def lab_env(data_dir: Path) -> dict[str, str]:
    """The server's data dir holds its notebook-signing secret: the test signs with it."""
    return {"JUPYTER_DATA_DIR": str(data_dir)}


@pytest.fixture(scope="module")
def lab_config() -> dict[str, Any]:
    return {"ServerApp": {"jpserver_extensions": {EXTENSION: True}}}


def _output(session_id: str, summary: str) -> Any:
    return new_output(
        "display_data",
        data={
            "application/vnd.jupyter.widget-view+json": {
                "version_major": 2,
                "version_minor": 0,
                "model_id": "0" * 32,
            },
            "text/html": f"<div class='codeagent-summary'>{summary}</div>",
            "text/plain": "codeagent panel",
            PANEL_MIME: {"version": 1, "session_id": session_id},
        },
    )


def test_a_saved_session_id_never_becomes_code(
    jupyterlab_server: tuple[str, str, Path], browser_page: Any, data_dir: Path
) -> None:
    base_url, token, root = jupyterlab_server
    hostile = f"x' + __import__('pathlib').Path('{root / MARKER}').touch().__str__() + '"
    hostile_json = f'x"); __import__("pathlib").Path("{root / MARKER}").touch(); ("'
    cells = [
        new_code_cell("%agent a", id="hostile", outputs=[_output(hostile, "hostile run")]),
        new_code_cell("%agent b", id="json", outputs=[_output(hostile_json, "json run")]),
        new_code_cell("%agent c", id="unknown", outputs=[_output("0123456789ab", "other run")]),
    ]
    kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook = new_notebook(cells=cells, metadata={"kernelspec": kernelspec})
    NotebookNotary(data_dir=str(data_dir)).sign(notebook)
    nbformat.write(notebook, root / "shared.ipynb")

    page = browser_page
    lab = LabPage(page, base_url, token)
    lab.open_notebook("shared.ipynb")
    outputs = page.locator(".jp-Notebook .codeagent-panel-output")
    outputs.nth(2).locator(".codeagent-reattach-said").filter(has_text="no longer").wait_for(
        timeout=30_000
    )
    assert outputs.count() == 3  # trusted: each output went through the labextension
    for i, summary in enumerate(("hostile run", "json run", "other run")):
        assert summary in outputs.nth(i).inner_text()
    for i in (0, 1):
        said = outputs.nth(i).locator(".codeagent-reattach-said").inner_text()
        assert "names no session" in said
    assert page.locator(".codeagent-reattach").count() == 0
    assert (
        page.locator(".codeagent-reattach-bar script, .codeagent-reattach-bar [onclick]").count()
        == 0
    )
    page.wait_for_timeout(1000)
    assert not (root / MARKER).exists()
