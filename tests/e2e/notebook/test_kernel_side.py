"""The kernel side of a session's life, in a real user kernel against a real server:
JupyterLab's interrupt (■) of the idle kernel stops the agent's run; running an ``%agent``
cell again releases its previous session (resumable); ``%agent --cell ID fix`` fixes that
cell even after other cells failed since."""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.notebook.test_fix import BROKEN, FIXED, run_in_cell
from tests.scripted_model import text, tool_calls

PANELS = "get_ipython().magics_manager.registry['AgentMagics'].panels"
PANEL = PANELS + "[-1]"
FIRST_CELL_STATUS = f"{PANEL}.state.cells[0].status if {PANEL}.state.cells else ''"


def spin_then_answer(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """``spin …`` runs a cell that never ends by itself; anything else is answered."""
    if messages[-1]["role"] == "tool":
        return text("stopped")
    if "spin" in json.dumps(messages[-1]):
        return tool_calls(("run_cell", {"code": "import time\nwhile True: time.sleep(0.1)"}))
    return text("hi")


async def interrupt_a_running_cell(kernel: Any) -> dict[str, Any]:
    """■ while a cell of the user's runs: that cell gets KeyboardInterrupt, as always.

    ■ waits for the cell's own output, not its ``execute_input``: ipykernel publishes that
    before the cell's code starts, and an interrupt landing in between is logged and
    swallowed by ipykernel with no reply at all (its own race, in any JupyterLab)."""
    code = "import time; print('sleeping', flush=True); time.sleep(60)"
    msg_id = kernel.kc.execute(code, stop_on_error=False)  # as run_in_cell, for the same reason
    while True:
        msg = await kernel.kc.get_iopub_msg(timeout=30)
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
            break
    await kernel.km.interrupt_kernel()
    while True:
        reply = await kernel.kc.get_shell_msg(timeout=30)
        if reply["parent_header"].get("msg_id") == msg_id:
            return reply["content"]


def test_interrupting_the_idle_kernel_stops_the_agent(
    run: Any, kernel: Any, client: Any, scripted_model: Any
) -> None:
    scripted_model.set_script(spin_then_answer)

    async def scenario() -> None:
        reply = await run_in_cell(kernel, "%agent spin forever", "agent-cell")
        assert reply["status"] == "ok"  # the magic returned: the kernel is idle
        await kernel.until(FIRST_CELL_STATUS, "running")
        await kernel.km.interrupt_kernel()  # what JupyterLab's ■ asks the server to do
        await kernel.until(f"{PANEL}.state.status", "cancelled", timeout=60)
        sid = (await kernel.stream(f"print({PANEL}.session_id)")).strip()
        finished = [e for e in (await client.session(sid))["events"] if e["type"] == "run_finished"]
        assert finished[-1]["status"] == "cancelled"
        assert (await kernel.stream("print(6 * 7)")).strip() == "42"  # the kernel lives on
        interrupted = await interrupt_a_running_cell(kernel)
        assert interrupted["status"] == "error" and interrupted["ename"] == "KeyboardInterrupt"
        # ■ with no run going: nothing happens, nothing breaks.
        await kernel.km.interrupt_kernel()
        assert (await kernel.stream("print('still here')")).strip() == "still here"

    run(scenario())


def test_running_an_agent_cell_again_releases_its_session(
    run: Any, kernel: Any, client: Any, scripted_model: Any
) -> None:
    scripted_model.set_script(spin_then_answer)

    async def scenario() -> None:
        await run_in_cell(kernel, "%agent say hi", "cell-a")
        await kernel.until(f"{PANEL}.state.status", "answered")
        first = (await kernel.stream(f"print({PANEL}.session_id)")).strip()
        await run_in_cell(kernel, "%agent spin", "cell-b")  # another cell: left alone
        await kernel.until(FIRST_CELL_STATUS, "running")
        spinning = (await kernel.stream(f"print({PANEL}.session_id)")).strip()

        await run_in_cell(kernel, "%agent say hi again", "cell-a")  # the same cell again
        await kernel.until(f"{PANEL}.state.status", "answered")
        await run_in_cell(kernel, "%agent spin again", "cell-b")  # a running one is stopped
        await kernel.until(f"len({PANELS})", "2")
        await kernel.until(FIRST_CELL_STATUS, "running")
        again = (await kernel.stream(f"print({PANEL}.session_id)")).strip()
        for _ in range(100):
            listed = {s["id"]: s for s in await client.sessions()}
            if listed[spinning]["state"] == "closed":
                break
            await kernel.stream("import time; time.sleep(0.2)")
        assert listed[first]["state"] == "closed" and listed[first]["closed_reason"] == "paused"
        assert listed[first]["resumable"] is True
        assert listed[spinning]["state"] == "closed" and listed[spinning]["status"] == "cancelled"
        # --attach in the same cell shows that session again and does not close it.
        await run_in_cell(kernel, f"%agent --attach {first}", "cell-a")
        await kernel.until(f"{PANEL}.state.status", "answered")
        assert {s["id"]: s for s in await client.sessions()}[first]["closed_reason"] == "paused"
        await client.cancel(again)

    run(scenario())


def test_fix_names_the_cell_it_fixes(run: Any, kernel: Any, scripted_model: Any) -> None:
    edit = {"cell_id": "broken-sum", "new_source": FIXED, "reason": "count"}
    scripted_model.set_script([tool_calls(("edit_cell", edit)), text("Use len(prices).")])

    async def scenario() -> None:
        await run_in_cell(kernel, "prices = [1, 2, 3]", "load-prices")
        assert (await run_in_cell(kernel, BROKEN, "broken-sum"))["status"] == "error"
        assert (await run_in_cell(kernel, "1 / 0", "other"))["status"] == "error"  # later
        # No notebook on disk has the cells: the kernel sends the failed one with the start.
        await run_in_cell(kernel, "%agent --cell broken-sum fix", "fix")
        await kernel.until(f"{PANEL}.state.status", "answered")
        edits = await kernel.stream(f"print([c.edit['cell_id'] for c in {PANEL}.state.cells])")
        assert edits.strip() == "['broken-sum']"
        unknown = await kernel.stream("%agent --cell nowhere fix", "stdout")
        await kernel.until(f"'cell nowhere' in {PANEL}.notice.value", "True")
        assert "Traceback" not in unknown

    run(scenario())
    sent = json.dumps(scripted_model.requests[0]["messages"])
    assert "My last cell (cell id=broken-sum) failed." in sent and "ZeroDivision" not in sent
