"""The session works on the notebook the user has open now: the path follows renames and
moves (through jupyter_server's session table, by kernel id), and cells not yet saved are
known (the live cells the client sends). Real server, kernels, sandboxes; scripted model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.scripted_model import text, tool_calls
from tests.server.helpers import Api, of_type


async def jupyter_session(api: Api, path: str) -> dict[str, Any]:
    """A notebook session with a real python3 kernel, as JupyterLab opens one."""
    body = {"path": path, "type": "notebook", "name": "", "kernel": {"name": "python3"}}
    response = await api.fetch("api", "sessions", method="POST", body=json.dumps(body))
    return json.loads(response.body)


async def move(api: Api, session: dict[str, Any], old: str, new: str) -> None:
    """Rename the file, then tell the session, in the order JupyterLab does on a rename."""
    body = json.dumps({"path": new})
    await api.fetch("api", "contents", *old.split("/"), method="PATCH", body=body)
    await api.fetch("api", "sessions", session["id"], method="PATCH", body=body)


async def close(api: Api, session: dict[str, Any]) -> None:
    await api.fetch("api", "sessions", session["id"], method="DELETE")


def write(root: Path, path: str, cells: list[Any]) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=cells), root / path)


def context_of(scripted_model: Any) -> str:
    return json.dumps(scripted_model.requests[0]["messages"])


async def test_the_session_finds_the_notebook_after_a_rename(
    api: Api, scripted_model: Any, jp_root_dir: Path
) -> None:
    write(jp_root_dir, "Untitled.ipynb", [nbformat.v4.new_code_cell("x = 1", id="first")])
    jupyter = await jupyter_session(api, "Untitled.ipynb")
    kernel_id = jupyter["kernel"]["id"]
    (jp_root_dir / "work").mkdir()
    await move(api, jupyter, "Untitled.ipynb", "work/analysis.ipynb")
    edit = {"cell_id": "first", "new_source": "x = 2", "reason": "two"}
    scripted_model.set_script([tool_calls(("edit_cell", edit)), text("done")])
    try:
        # JPY_SESSION_NAME still says Untitled.ipynb: the kernel id says where it is now.
        session = await api.start("change x", notebook_path="Untitled.ipynb", kernel_id=kernel_id)
        assert session["notebook_path"] == "work/analysis.ipynb"
        events = await api.run_to_end(session["id"])
        (finished,) = of_type(events, "tool_call_finished")
        assert finished["edit"]["old_source"] == "x = 1", finished
        assert "x = 1" in context_of(scripted_model)

        await move(api, jupyter, "work/analysis.ipynb", "final.ipynb")  # moved once more
        listed = {s["id"]: s for s in await api.ok("GET", "sessions")}
        assert listed[session["id"]]["notebook_path"] == "final.ipynb"
        detail = await api.ok("GET", f"sessions/{session['id']}")
        assert detail["notebook_path"] == "final.ipynb"
    finally:
        await close(api, jupyter)

    # A kernel no Jupyter session runs (a console, another server): the path given is used.
    scripted_model.set_script([text("ok")])
    (jp_root_dir / "final.ipynb").rename(jp_root_dir / "Untitled.ipynb")
    other = await api.start("hi", notebook_path="Untitled.ipynb", kernel_id="not-a-kernel")
    assert other["notebook_path"] == "Untitled.ipynb"
    await api.run_to_end(other["id"])


async def test_edit_cell_works_on_cells_not_saved_yet(
    api: Api, scripted_model: Any, jp_root_dir: Path
) -> None:
    write(jp_root_dir, "nb.ipynb", [nbformat.v4.new_code_cell("old = 1", id="saved")])
    live = [
        {"id": "saved", "cell_type": "code", "source": "old = 1", "execution_count": 1},
        {
            "id": "typed-now",
            "cell_type": "code",
            "source": "total = sum(prices) / count",
            "execution_count": 2,
            "outputs": [{"output_type": "error", "text": "NameError: name 'count' is not defined"}],
        },
    ]
    fixed = "total = sum(prices) / len(prices)"
    edit = {"cell_id": "typed-now", "new_source": fixed, "reason": "count"}
    scripted_model.set_script([tool_calls(("edit_cell", edit)), text("fixed")])
    session = await api.start("fix it", notebook_path="nb.ipynb", cells=live, cells_complete=True)
    (finished,) = of_type(await api.run_to_end(session["id"]), "tool_call_finished")
    assert finished["status"] == "ok" and finished["edit"]["new_source"] == fixed
    sent = context_of(scripted_model)
    assert "id=typed-now" in sent and "name 'count' is not defined" in sent

    # Without the JupyterLab extension the kernel knows only the failed cell: laid over the
    # saved notebook, and enough even when the notebook was never saved at all.
    for path in ("nb.ipynb", "never-saved.ipynb"):
        scripted_model.requests.clear()
        scripted_model.set_script([tool_calls(("edit_cell", edit)), text("fixed")])
        session = await api.start("fix it", notebook_path=path, cells=live[1:])
        (finished,) = of_type(await api.run_to_end(session["id"]), "tool_call_finished")
        assert finished["status"] == "ok", finished
        assert ("old = 1" in context_of(scripted_model)) == (path == "nb.ipynb")


@pytest.mark.parametrize(
    "fields",
    [
        {"cells": [{"id": "../x", "source": ""}]},
        {"cells": [{"id": "a", "source": "x", "outputs": [{"output_type": "x"}]}]},
        {"cells": "not a list"},
        {"kernel_id": "../../etc"},
        {"cells_complete": "yes"},
    ],
)
async def test_bad_live_cells_are_refused(api: Api, fields: dict[str, Any]) -> None:
    code, body = await api.call("POST", "sessions", {"prompt": "x", **fields})
    assert code == 400 and "\n" not in body["message"], body


async def test_instruction_files_of_the_root_and_the_notebooks_folder_are_named(
    api: Api, scripted_model: Any, jp_root_dir: Path
) -> None:
    from codeagent_jupyter.events import Event
    from codeagent_jupyter.timeline.fold import fold
    from codeagent_jupyter.widget.header import instructions_html

    write(jp_root_dir, "course/w3/a.ipynb", [nbformat.v4.new_code_cell("x = 1")])
    (jp_root_dir / "AGENTS.md").write_text("Use polars.\n")
    (jp_root_dir / "course" / "w3" / "AGENTS.md").write_text("Plots in SI units.\n")
    scripted_model.set_script([text("ok")])
    session = await api.start("go", notebook_path="course/w3/a.ipynb")
    events = await api.run_to_end(session["id"])
    system = scripted_model.requests[0]["messages"][0]["content"]
    assert system.index("Use polars.") < system.index("Plots in SI units.")
    applied = ["AGENTS.md (12 bytes)", "course/w3/AGENTS.md (19 bytes)"]
    (started,) = of_type(events, "run_started")
    assert started["config"]["extra_context"]["instruction_files"] == applied
    state = fold(Event.from_dict(e) for e in events)  # what the panel's header shows
    shown = instructions_html(state.instructions)
    assert "Instructions:" in shown and all(name in shown for name in applied)
    saved = await api.ok("GET", f"sessions/{session['id']}/notebook")
    assert saved["metadata"]["codeagent"]["config"]["extra_context"]["instruction_files"] == (
        applied
    )
