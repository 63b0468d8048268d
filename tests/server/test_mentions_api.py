"""@-mentions through the server: files and cells resolved beneath the notebook's folder;
an unknown mention, a path out of the folder or through a symlink is a 400 with one line
before any sandbox starts. Real server, kernels, sandboxes; scripted model."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import nbformat

from tests.scripted_model import text
from tests.server.helpers import Api, of_type


def _notebook(root: Path) -> None:
    (root / "work").mkdir()
    cells = [
        nbformat.v4.new_code_cell(
            "totals = df.sum()",
            execution_count=3,
            outputs=[nbformat.v4.new_output("stream", text="totals: 42\n")],
        )
    ]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), root / "work" / "a.ipynb")
    (root / "work" / "data.csv").write_text("month,revenue\n2024-04,17\n")
    (root / "secret.txt").write_text("another user's secret\n")


async def test_unknown_and_escaping_mentions_are_refused_before_anything_runs(
    api: Api, scripted_model: Any, jp_root_dir: Path
) -> None:
    _notebook(jp_root_dir)
    os.symlink(jp_root_dir / "secret.txt", jp_root_dir / "work" / "link.txt")
    for prompt, said in [
        ("plot @nothere", "unknown mention @nothere: not a variable copied from your kernel"),
        ("read @../secret.txt", "unknown mention @../secret.txt: refused"),
        ("read @link.txt", "unknown mention @link.txt: refused"),
        ("explain @In[9]", "unknown mention @In[9]: no such cell"),
    ]:
        code, body = await api.call(
            "POST", "sessions", {"prompt": prompt, "notebook_path": "work/a.ipynb"}
        )
        assert code == 400 and body["message"].startswith(said), (prompt, code, body)
        assert "secret" not in json.dumps(body).replace("secret.txt", "")
    assert await api.ok("GET", "sessions") == []  # no session, no sandbox
    assert scripted_model.requests == []


async def test_mentioned_file_and_cell_reach_the_model_and_follow_ups_mention_too(
    api: Api, scripted_model: Any, jp_root_dir: Path
) -> None:
    _notebook(jp_root_dir)
    scripted_model.set_script([text("seen"), text("seen again")])
    prompt = "chart @data.csv like @In[3]"
    session = await api.start(prompt, notebook_path="work/a.ipynb")
    events = await api.run_to_end(session["id"])
    first = json.dumps(scripted_model.requests[0]["messages"])
    assert "2024-04,17" in first and "totals = df.sum()" in first and "totals: 42" in first
    assert of_type(events, "run_started")[0]["title"] == prompt  # people read the request

    (jp_root_dir / "work" / "notes.md").write_text("fiscal year starts in April\n")
    code, body = await api.call(
        "POST", f"sessions/{session['id']}/messages", {"text": "and @nope.md"}
    )
    assert code == 400 and body["message"].startswith("unknown mention @nope.md"), body
    await api.ok("POST", f"sessions/{session['id']}/messages", {"text": "see @notes.md"}, 202)
    await api.run_to_end(session["id"], since=len(events))
    assert "fiscal year starts in April" in json.dumps(scripted_model.requests[-1]["messages"])
