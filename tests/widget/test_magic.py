"""``%agent`` in a real IPython kernel, talking to a real server (CODEAGENT_SERVER_URL/TOKEN)."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_client.manager import AsyncKernelManager

import codeagent_jupyter
from codeagent_jupyter.widget.client import TOKEN_ENV, URL_ENV, AgentClient, ServerInfo
from tests.scripted_model import text, tool_calls

EXTENSION = (
    "codeagent_jupyter"
    if hasattr(codeagent_jupyter, "load_ipython_extension")
    else "codeagent_jupyter.widget"
)
PACKAGE = "codeagent_jupyter" if hasattr(codeagent_jupyter, "panel") else "codeagent_jupyter.widget"
PANELS = "get_ipython().magics_manager.registry['AgentMagics'].panels"


class Kernel:
    def __init__(self, client: Any, manager: Any = None) -> None:
        self.kc = client
        self.km = manager
        """The kernel's manager (``interrupt_kernel`` is what JupyterLab's ■ calls)."""

    async def run(self, code: str, timeout: float = 60) -> tuple[dict[str, Any], list[dict]]:
        """Execute ``code``; the execute_reply content and the iopub messages of the cell.

        Without ``stop_on_error`` (see ``tests.e2e.notebook.test_fix.run_in_cell``): a cell
        that raises must not get the next request aborted."""
        msg_id = self.kc.execute(code, stop_on_error=False)
        messages = []
        while True:
            msg = await self.kc.get_iopub_msg(timeout=timeout)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
            messages.append(msg)
        while True:
            reply = await self.kc.get_shell_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply["content"], messages

    async def stream(self, code: str, name: str = "stdout") -> str:
        _, messages = await self.run(code)
        return "".join(
            m["content"]["text"]
            for m in messages
            if m["msg_type"] == "stream" and m["content"]["name"] == name
        )

    async def until(self, expression: str, expected: str, timeout: float = 90) -> None:
        """Poll ``print(expression)`` in the kernel (the panel updates between cells)."""
        seen = ""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen = (await self.stream(f"import time; time.sleep(0.1); print({expression})")).strip()
            if seen == expected:
                return
        notices = await self.stream(f"print([p.notice.value for p in {PANELS}])")
        raise AssertionError(f"{expression} stayed {seen!r}, wanted {expected!r}; {notices}")


@contextlib.contextmanager
def user_kernel(run: Any, server_info: ServerInfo) -> Iterator[Kernel]:
    """A real user kernel (python3) that finds the test server (CODEAGENT_SERVER_URL/TOKEN)."""
    env = {**os.environ, URL_ENV: server_info.url, TOKEN_ENV: server_info.token}
    manager = AsyncKernelManager(kernel_name="python3")
    run(manager.start_kernel(env=env))
    client = manager.client()
    client.start_channels()
    try:
        run(client.wait_for_ready(timeout=60))
        yield Kernel(client, manager)
    finally:
        client.stop_channels()
        run(manager.shutdown_kernel(now=True))


@pytest.fixture
def kernel(run: Any, server_info: ServerInfo) -> Any:
    with user_kernel(run, server_info) as k:
        yield k


def test_agent_magic_in_a_kernel(
    run: Any, kernel: Kernel, client: AgentClient, scripted_model: Any
) -> None:
    run(_agent_magic_in_a_kernel(kernel, client, scripted_model))


async def _agent_magic_in_a_kernel(kernel: Kernel, client: AgentClient, scripted_model: Any):
    await kernel.run(f"%load_ext {EXTENSION}")
    bad = await kernel.stream("%agent --max-steps many go", "stderr")
    assert "UsageError: %agent: argument --max-steps" in bad and bad.count("\n") == 1

    scripted_model.set_script(
        [tool_calls(("run_cell", {"code": "total = sum(range(10))\nprint(total)"})), text("45")]
    )
    reply, messages = await kernel.run("%agent what's the sum of 0..9? (don't guess)")
    assert reply["status"] == "ok"
    views = [m for m in messages if m["msg_type"] == "display_data"]
    assert "application/vnd.jupyter.widget-view+json" in views[0]["content"]["data"]
    # JupyterLab's side learns the session from its own view (none yet: it has not started).
    panel_view = views[0]["content"]["data"]["application/vnd.codeagent.panel+json"]
    assert panel_view == {"version": 1, "session_id": None}
    await kernel.until(f"{PANELS}[-1].state.status", "answered")
    sid = (await kernel.stream(f"print({PANELS}[-1].session_id)")).strip()
    detail = await client.session(sid)
    assert detail["prompt"] == "what's the sum of 0..9? (don't guess)"  # quotes kept verbatim

    # Without the JupyterLab extension, `%agent accept N` puts the code in the next cell.
    reply, _ = await kernel.run("%agent accept 1")
    (payload,) = [p for p in reply["payload"] if p["source"] == "set_next_input"]
    assert payload["text"] == "total = sum(range(10))\nprint(total)"
    await kernel.until(f"{PANELS}[-1].state.cells[0].decision", "True")

    # After a kernel restart the session is still on the server: --attach replays it.
    await kernel.run(f"%agent --attach {sid}")
    await kernel.until(f"{PANELS}[-1].state == {PANELS}[-2].state", "True")
    cells = await kernel.stream(f"print(len({PANELS}[-1].state.cells))")
    assert cells.strip() == "1"

    # %%agent: the cell body is the request.
    scripted_model.set_script([text("6")])
    await kernel.run("%%agent\nadd up 1, 2 and 3\n(show your work)")
    await kernel.until(f"{PANELS}[-1].state.status", "answered")
    prompt = await kernel.stream(f"print(repr({PANELS}[-1].state.items[0].text))")
    assert prompt.strip() == repr("add up 1, 2 and 3\n(show your work)")

    # Options reach the server, whose refusals show up in the panel in one line.
    await kernel.run("%agent --model someone-elses-model hello")
    await kernel.until(f"'is not allowed' in {PANELS}[-1].notice.value", "True")

    # panel(): an empty panel with a prompt box; Send starts a session.
    reply, messages = await kernel.run(f"import {PACKAGE} as ca\np = ca.panel()")
    assert [m for m in messages if m["msg_type"] == "display_data"]
    assert (await kernel.stream("print(p.session_id, p.state.status)")).strip() == "None idle"
    scripted_model.set_script([text("Hello from the agent.")])
    await kernel.run("p.prompt.value = 'say hello'; p.send.click()")
    await kernel.until("p.state.status", "answered")
    assert (await kernel.stream("print(p.state.items[-2].text)")).strip() == "Hello from the agent."

    # No server: one line that says what to do, no panel, no traceback.
    url = json.dumps("http://127.0.0.1:9/")
    await kernel.run(f"import os; os.environ[{URL_ENV!r}] = {url}")
    reply, messages = await kernel.run("%agent hello")
    err = "".join(m["content"].get("text", "") for m in messages if m["msg_type"] == "stream")
    assert err.startswith("codeagent: cannot reach the Jupyter server") and err.count("\n") == 1
    assert not [m for m in messages if m["msg_type"] in ("display_data", "error")]

    await kernel.run(f"%unload_ext {EXTENSION}")
    gone = await kernel.stream("%agent hello", "stderr")
    assert "UsageError: Line magic function `%agent` not found" in gone
