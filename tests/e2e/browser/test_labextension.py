"""The labextension in a real JupyterLab: the palette command and the "codeagent" comm.

The kernel side of the comm is played by a plain notebook cell using the `comm` package, the
same API the Python panel uses, so this checks the frontend contract on its own.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from tests.e2e.browser.lab import LabPage

PACKAGE_JSON = Path(__file__).parents[3] / "labextension" / "package.json"
NOTEBOOK = "smoke.ipynb"
PANEL_SOURCE = "%load_ext codeagent_jupyter\n%agent "

# Opens the comm and sends four requests; replies arrive once this cell has finished
# (the kernel handles comm messages between executions) and are printed by REPLIES_CELL.
OPEN_COMM_CELL = """\
from comm import create_comm

replies = []
agent_comm = create_comm(target_name="codeagent")
agent_comm.on_msg(lambda msg: replies.append(msg["content"]["data"]))
agent_comm.send({
    "action": "insert_cells", "request_id": "below-origin", "after_cell_id": None,
    "cells": [
        {"source": "x = 1", "metadata": {"codeagent": {"session_id": "s1", "step": 1}}},
        {"source": "print(x + 1)", "metadata": {"codeagent": {"session_id": "s1", "step": 2}}},
    ],
})
agent_comm.send({
    "action": "insert_cells", "request_id": "after-replies", "after_cell_id": "replies",
    "cells": [{"source": "# notes", "cell_type": "markdown", "metadata": {}}],
})
agent_comm.send({"action": "ping", "request_id": "ping"})
agent_comm.send({"action": "insert_cells", "request_id": "bad", "cells": []})
"""
REPLIES_CELL = "import json\nprint(json.dumps(replies))"


def test_palette_command_and_comm_insert_cells(
    jupyterlab_server: tuple[str, str, Path], browser_page, screenshot
) -> None:
    base_url, token, root = jupyterlab_server
    notebook = new_notebook(
        cells=[
            new_code_cell(OPEN_COMM_CELL, id="origin"),
            new_code_cell(REPLIES_CELL, id="replies"),
        ],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    nbformat.write(notebook, root / NOTEBOOK)
    lab = LabPage(browser_page, base_url, token)
    lab.open_notebook(NOTEBOOK)
    assert lab.has_command("codeagent:new-panel"), "labextension not loaded"

    # Shift+Enter moves the active cell to "replies": cells must still land below "origin".
    lab.run_cell("origin", advance=True)
    lab.wait_cell_count(5)
    replies_cell = lab.run_cell("replies")
    replies = {r["request_id"]: r for r in json.loads(replies_cell["outputs"][0]["text"])}

    lab.select_cell("origin")
    lab.run_from_palette("Code Agent: new panel")
    lab.wait_cell_count(6)
    assert lab.index_of_active() == 1
    lab.wait_edit_mode()
    browser_page.keyboard.type("plot x")  # the cursor waits at the end of "%agent "
    lab.wait_source(1, PANEL_SOURCE + "plot x")
    screenshot(browser_page, "after-insert")
    lab.save()

    cells = lab.read_saved(root).cells
    assert [c.source for c in cells] == [
        OPEN_COMM_CELL,
        PANEL_SOURCE + "plot x",
        "x = 1",
        "print(x + 1)",
        REPLIES_CELL,
        "# notes",
    ]
    assert [c.cell_type for c in cells] == ["code"] * 5 + ["markdown"]
    inserted = cells[2:4]
    assert [c.metadata["codeagent"] for c in inserted] == [
        {"session_id": "s1", "step": 1},
        {"session_id": "s1", "step": 2},
    ]
    assert all(c.execution_count is None and c.outputs == [] for c in inserted)
    assert cells[1].execution_count is None

    assert replies["below-origin"] == {
        "action": "inserted",
        "count": 2,
        "cell_ids": [c.id for c in inserted],
        "request_id": "below-origin",
    }
    assert replies["after-replies"]["cell_ids"] == [cells[5].id]
    version = json.loads(PACKAGE_JSON.read_text())["version"]
    assert replies["ping"] == {"action": "pong", "version": version, "request_id": "ping"}
    assert replies["bad"] == {
        "action": "error",
        "message": 'insert_cells needs a non-empty list "cells"',
        "request_id": "bad",
    }
