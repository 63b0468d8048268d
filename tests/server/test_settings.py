"""Server settings that choose parts: the kernel manager class of every sandbox."""

from __future__ import annotations

from typing import Any

import pytest

from tests.scripted_model import text, tool_calls
from tests.server.helpers import Api
from tests.server.kernel_managers import CountingKernelManager


@pytest.mark.codeagent(kernel_manager_class="tests.server.kernel_managers.CountingKernelManager")
async def test_sandboxes_start_through_the_configured_kernel_manager(
    api: Api, scripted_model: Any
) -> None:
    CountingKernelManager.started.clear()
    scripted_model.set_script([tool_calls(("run_cell", {"code": "6 * 7"})), text("42")])
    session = await api.start("multiply")
    events = await api.run_to_end(session["id"])
    assert events[-1]["status"] == "answered"
    assert CountingKernelManager.started == ["codeagent-sandbox"]
    await api.ok("DELETE", f"sessions/{session['id']}")


def test_a_kernel_manager_class_must_be_one() -> None:
    """A class that is no kernel manager is refused when the settings are read."""
    from traitlets import TraitError

    from codeagent_jupyter.server.app import CodeAgent

    with pytest.raises(TraitError, match="kernel_manager_class"):
        CodeAgent(kernel_manager_class="collections.OrderedDict")


@pytest.mark.codeagent(result_chars=12000)
async def test_result_chars_from_the_server_config_reaches_the_model(
    api: Api, scripted_model: Any
) -> None:
    scripted_model.set_script(
        [tool_calls(("run_cell", {"code": "print('x' * 12000, end='')"})), text("printed")]
    )
    session = await api.start("print a lot")
    assert (await api.run_to_end(session["id"]))[-1]["status"] == "answered"
    sent = [m for m in scripted_model.requests[1]["messages"] if m["role"] == "tool"]
    result = sent[-1]["content"].split("\n")  # then how long it ran, and the budget left
    assert result[0] == "x" * 12000 and result[1].startswith("[ran ")


async def test_agents_md_of_the_workspace_is_in_the_system_message(
    api: Api, scripted_model: Any, jp_root_dir: Any
) -> None:
    """A server session reads the workspace's AGENTS.md into its system message, the same in
    every step's request."""
    (jp_root_dir / "AGENTS.md").write_text("Our fiscal year starts in April.\n")
    scripted_model.set_script([tool_calls(("run_cell", {"code": "1"})), text("done")])
    session = await api.start("which quarter is May in?")
    assert (await api.run_to_end(session["id"]))[-1]["status"] == "answered"
    systems = [r["messages"][0] for r in scripted_model.requests]
    assert len(systems) == 2 and systems[0] == systems[1]
    assert "Our fiscal year starts in April." in systems[0]["content"]
    await api.ok("DELETE", f"sessions/{session['id']}")
