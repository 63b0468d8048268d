"""``c.CodeAgent.tools``: a plugin tool enabled by the administrator is offered to a server
session's model and runs in its sandbox; a name not installed stops the settings at once.

The example plugin is registered as an installed distribution on ``sys.path`` for the test
(the server runs in this process), and taken off again after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.scripted_model import text, tool_calls
from tests.server.helpers import Api
from tests.tools.test_plugins import EXAMPLE, MAKE_DF, PLUGIN, distribution


@pytest.fixture(autouse=True)
def plugin_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    distribution(tmp_path / "site", PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.syspath_prepend(str(EXAMPLE))


@pytest.mark.codeagent(tools=["describe_dataframe"])
async def test_an_enabled_plugin_runs_in_the_session_sandbox(api: Api, scripted_model: Any) -> None:
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": MAKE_DF})),
            tool_calls(("describe_dataframe", {"name": "df"})),
            text("3 rows"),
        ]
    )
    session = await api.start("describe df")
    events = await api.run_to_end(session["id"])
    assert events[-1]["status"] == "answered"
    offered = [t["function"]["name"] for t in scripted_model.requests[0]["tools"]]
    assert "describe_dataframe" in offered
    shown = [m for m in scripted_model.requests[2]["messages"] if m["role"] == "tool"][-1]
    assert "shape: 3 rows x 2 columns" in shown["content"]
    await api.ok("DELETE", f"sessions/{session['id']}")


def test_a_plugin_not_installed_is_refused_with_the_settings() -> None:
    from codeagent_jupyter.server.app import CodeAgent

    with pytest.raises(ValueError, match="tools: unknown tool 'nope'"):
        CodeAgent(tools=["nope"])
    with pytest.raises(ValueError, match="clashes with a built-in"):
        CodeAgent(tools=["run_cell"])


def test_mcp_servers_named_twice_are_refused_with_the_settings() -> None:
    from codeagent_jupyter.server.app import CodeAgent

    with pytest.raises(ValueError, match="mcp_servers: MCP server name 'a' is used twice"):
        CodeAgent(mcp_servers=["a=x", "a=y"])
