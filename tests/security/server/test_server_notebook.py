"""The user's notebook lives in a sandbox's workspace: the server reads it without trusting it.

A sandbox cell swaps the notebook for a symlink to a notebook outside the server root (say,
another user's) or for a FIFO; the next session for that notebook must get a 400, and
nothing of the outside notebook may reach the model.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.scripted_model import text, tool_calls
from tests.server.helpers import Api

NEEDLE = "OUTSIDE-NOTEBOOK-SECRET-7731"


@pytest.mark.codeagent(allow_unconfined=True)
async def test_a_swapped_notebook_is_never_followed(
    api: Api, scripted_model: Any, jp_root_dir: Path, tmp_path: Path
) -> None:
    folder = jp_root_dir / "work"
    folder.mkdir()
    own = nbformat.v4.new_notebook()
    own.cells.append(nbformat.v4.new_code_cell("threshold = 17"))
    nbformat.write(own, folder / "analysis.ipynb")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    theirs = nbformat.v4.new_notebook()
    theirs.cells.append(nbformat.v4.new_code_cell(f"token = '{NEEDLE}'"))
    nbformat.write(theirs, elsewhere / "private.ipynb")

    swap = (
        "import os\n"
        "os.replace('analysis.ipynb', 'analysis.bak')\n"
        f"os.symlink({str(elsewhere / 'private.ipynb')!r}, 'analysis.ipynb')\n"
        "os.mkfifo('pipe.ipynb')\n"
        "print('swapped')"
    )
    scripted_model.set_script([tool_calls(("run_cell", {"code": swap})), text("done")])
    first = await api.start("tidy up", notebook_path="work/analysis.ipynb")
    events = await api.run_to_end(first["id"])
    assert "swapped" in json.dumps(events)  # the attack really ran in the sandbox
    link = folder / "analysis.ipynb"
    assert link.is_symlink() and NEEDLE in link.read_text()  # following it would leak

    asked = len(scripted_model.requests)
    code, reply = await api.call(
        "POST", "sessions", {"prompt": "go on", "notebook_path": "work/analysis.ipynb"}
    )
    assert code == 400 and "cannot be read" in reply["message"], reply
    started = time.monotonic()
    code, reply = await api.call(
        "POST", "sessions", {"prompt": "go on", "notebook_path": "work/pipe.ipynb"}
    )
    assert code == 400 and time.monotonic() - started < 20, reply  # a FIFO never blocks
    assert len(scripted_model.requests) == asked  # nothing was sent to the model
    assert NEEDLE not in json.dumps(scripted_model.requests)
