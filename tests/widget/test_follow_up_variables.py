"""A variable first mentioned in a follow-up is copied into the sandbox before the message
runs: in a live session and in one that was paused (resumed by the message). A real user
kernel with ``%agent``, the real panel's prompt box, a real server and sandboxes; the
scripted model is the only stand-in.
"""

from __future__ import annotations

import json
from typing import Any

from codeagent_jupyter.widget.client import AgentClient, ServerInfo
from tests.scripted_model import text, tool_calls
from tests.widget.test_magic import EXTENSION, PANELS, Kernel, user_kernel


def test_a_follow_up_brings_the_variables_it_mentions(
    run: Any, server_info: ServerInfo, client: AgentClient, scripted_model: Any
) -> None:
    with user_kernel(run, server_info) as kernel:
        run(_follow_ups(kernel, client, scripted_model))


async def _send(kernel: Kernel, message: str) -> None:
    await kernel.run(f"p = {PANELS}[-1]; p.prompt.value = {message!r}; p.send.click()")


async def _outputs(kernel: Kernel) -> str:
    return await kernel.stream(f"print([c.outputs for c in {PANELS}[-1].state.cells])")


async def _follow_ups(kernel: Kernel, client: AgentClient, scripted_model: Any) -> None:
    await kernel.run(
        f"%load_ext {EXTENSION}\nimport pandas as pd\n"
        "sales = pd.DataFrame({'v': [1, 2, 3]})\nbonus = 36"
    )
    scripted_model.set_script([text("hello")])
    await kernel.run("%agent hello")
    await kernel.until(f"{PANELS}[-1].state.status", "answered")
    sid = (await kernel.stream(f"print({PANELS}[-1].session_id)")).strip()

    # Live: @sales was not in the first request; the follow-up copies it in first.
    scripted_model.set_script(
        [tool_calls(("run_cell", {"code": "print('total', sales.v.sum())"})), text("6")]
    )
    await _send(kernel, "what is the total of @sales?")
    await kernel.until(f"len({PANELS}[-1].state.cells)", "1")
    await kernel.until(f"{PANELS}[-1].state.status", "answered")
    assert "total 6" in await _outputs(kernel)
    asked = json.dumps(scripted_model.requests[-2]["messages"])
    assert "copied from the user's kernel" in asked and "sales" in asked

    # Paused: the message resumes the session (its cells run again; copied variables are
    # not cells, so @sales is gone) and @bonus is loaded after them.
    await client.pause(sid)
    await kernel.until(f"{PANELS}[-1].state.status in ('paused', 'closed', 'answered')", "True")
    scripted_model.set_script(
        [tool_calls(("run_cell", {"code": "print('sum', bonus + 6)"})), text("42")]
    )
    await _send(kernel, "add @bonus to it")
    await kernel.until(f"len({PANELS}[-1].state.cells)", "2", timeout=180)
    await kernel.until(f"{PANELS}[-1].state.status", "answered", timeout=180)
    assert "sum 42" in await _outputs(kernel)

    # An unknown name is still refused in one line, the message given back to edit.
    await _send(kernel, "and @nowhere_defined")
    await kernel.until(f"'unknown mention @nowhere_defined' in {PANELS}[-1].notice.value", "True")
    back = await kernel.stream(f"print({PANELS}[-1].prompt.value)")
    assert back.strip() == "and @nowhere_defined"
