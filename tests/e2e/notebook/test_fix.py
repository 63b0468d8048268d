"""``%agent fix`` in a real user kernel: the last failed cell (source, traceback, cell id)
becomes the request, and the model's ``edit_cell`` proposal lands on that cell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat

from tests.scripted_model import text, tool_calls

PANEL = "get_ipython().magics_manager.registry['AgentMagics'].panels[-1]"
BROKEN = "total = sum(prices) / count\nprint(total)"
FIXED = "total = sum(prices) / len(prices)\nprint(total)"


async def run_in_cell(kernel: Any, code: str, cell_id: str) -> dict[str, Any]:
    """Execute ``code`` as JupyterLab does, with the notebook cell id in the metadata.

    Without ``stop_on_error``: after a cell that raises, ipykernel aborts the execute
    requests that reach it before it has cleared its queue (a reply ``aborted``, nothing
    run), and a test sends its next request at once, where a user takes seconds."""
    kc = kernel.kc
    content = {
        "code": code,
        "silent": False,
        "store_history": True,
        "allow_stdin": False,
        "stop_on_error": False,
    }
    msg = kc.session.msg("execute_request", content, metadata={"cellId": cell_id})
    kc.shell_channel.send(msg)
    while True:
        reply = await kc.get_shell_msg(timeout=60)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            return reply["content"]


def test_agent_fix_proposes_an_edit_of_the_failed_cell(
    run: Any, kernel: Any, scripted_model: Any, jp_root_dir: Path
) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("prices = [1, 2, 3]", id="load-prices"),
        nbformat.v4.new_code_cell(BROKEN, id="broken-sum"),
    ]
    nbformat.write(nb, jp_root_dir / "work.ipynb")
    scripted_model.set_script(
        [
            tool_calls(
                ("edit_cell", {"cell_id": "broken-sum", "new_source": FIXED, "reason": "count"})
            ),
            text("Use len(prices)."),
        ]
    )

    async def scenario() -> str:
        nothing = await kernel.stream("%agent fix", "stderr")
        assert "%agent fix: no cell has failed since %load_ext" in nothing
        assert (await run_in_cell(kernel, "prices = [1, 2, 3]", "load-prices"))["status"] == "ok"
        failed = await run_in_cell(kernel, BROKEN, "broken-sum")
        assert failed["status"] == "error" and failed["ename"] == "NameError"
        reply, messages = await kernel.run("%agent --notebook-path work.ipynb fix")
        assert reply["status"] == "ok", reply
        streams = {"stdout": "", "stderr": ""}
        for m in messages:
            if m["msg_type"] == "stream":
                streams[m["content"]["name"]] += m["content"]["text"]
        tip = streams["stdout"]
        assert not streams["stderr"], streams["stderr"]
        await kernel.until(f"{PANEL}.state.status", "answered")
        edits = await kernel.stream(f"print([c.edit['cell_id'] for c in {PANEL}.state.cells])")
        assert edits.strip() == "['broken-sum']"
        # Without the JupyterLab extension, Accept gives the new source in a cell below.
        reply, _ = await kernel.run("%agent accept 1")
        (payload,) = [p for p in reply["payload"] if p["source"] == "set_next_input"]
        assert payload["text"] == (
            "# codeagent: proposed replacement for cell broken-sum (no JupyterLab extension "
            "to edit it in place)\n" + FIXED
        )
        await kernel.until(f"{PANEL}.state.cells[0].decision", "True")
        return tip

    tip = run(scenario())
    assert "%agent --with prices fix" in tip
    sent = json.dumps(scripted_model.requests[0]["messages"])
    assert "My last cell (cell id=broken-sum) failed. Fix it." in sent
    assert json.dumps(BROKEN)[1:-1] in sent
    assert "NameError: name 'count' is not defined" in sent
    assert "interactiveshell" not in sent  # IPython's own frames are left out
    assert "edit_cell on cell_id 'broken-sum'" in sent


def test_agent_fix_in_n_reads_as_the_user_sees_it(
    run: Any, kernel: Any, scripted_model: Any, client: Any, jp_root_dir: Path
) -> None:
    """``%agent fix In[n]`` (what the error's Fix button inserts) names the cell by its
    number: the session's title, the panel's request and the edit's diff say ``In [n]`` and
    the error's last line; the generated prompt still reaches the model and the recording."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("prices = [1, 2, 3]", id="load-prices"),
        nbformat.v4.new_code_cell(BROKEN, id="broken-sum"),
    ]
    nbformat.write(nb, jp_root_dir / "work.ipynb")
    scripted_model.set_script(
        [
            tool_calls(
                ("edit_cell", {"cell_id": "broken-sum", "new_source": FIXED, "reason": "count"})
            ),
            text("Use len(prices)."),
        ]
    )

    async def scenario() -> tuple[int, str, str, dict[str, Any]]:
        assert (await run_in_cell(kernel, "prices = [1, 2, 3]", "load-prices"))["status"] == "ok"
        failed = await run_in_cell(kernel, BROKEN, "broken-sum")
        number = failed["execution_count"]
        await kernel.run("%agent fix In[999]")  # no such cell here: the panel says so
        first = "get_ipython().magics_manager.registry['AgentMagics'].panels[0]"
        await kernel.until(f"'In [999]' in {first}.notice.value", "True")
        missing = await kernel.stream(f"print({first}.notice.value)")
        reply, _ = await kernel.run(f"%agent --notebook-path work.ipynb fix In[{number}]")
        assert reply["status"] == "ok", reply
        await kernel.until(f"{PANEL}.state.status", "answered")
        request = await kernel.stream(f"print({PANEL}.timeline.children[0].value)")
        edit = await kernel.stream(f"print({PANEL}.timeline.children[1].children[0].value)")
        sid = (await kernel.stream(f"print({PANEL}.session_id)")).strip()
        return number, request + edit, missing, await client.session(sid)

    number, shown, missing, detail = run(scenario())
    label = f"In [{number}]"
    title = f"Fix {label}: NameError: name 'count' is not defined"
    assert detail["title"] == title
    (started,) = [e for e in detail["events"] if e["type"] == "run_started"]
    assert started["title"] == title and "edit_cell on cell_id 'broken-sum'" in started["prompt"]
    (finished,) = [e for e in detail["events"] if e["type"] == "tool_call_finished"]
    assert finished["edit"]["label"] == label
    assert finished["edit"]["diff"].startswith(f"--- {label}\n+++ {label} (proposed)")
    assert f">Fix {label}</b>" in shown and "name &#x27;count&#x27; is not defined" in shown
    assert f"Edit of your cell <b>{label}</b>" in shown and "broken-sum</code>" not in shown
    assert "what the agent was asked" in shown  # the generated prompt, folded
    assert "edit_cell on cell_id 'broken-sum'" in json.dumps(scripted_model.requests[0])
    assert "In [999]" in missing  # no such cell: a one-line notice, not a traceback
