"""``c.CodeAgent.mcp_servers``: each server session starts the administrator's MCP servers
(a real one, written with the SDK), offers their tools, asks the user before each call
through the session's approvals, and stops the servers when the session closes.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from tests.scripted_model import text, tool_calls
from tests.server.helpers import Api, descendants

pytest.importorskip("mcp", reason="the mcp extra is not installed")

SERVER = Path(__file__).parents[1] / "tools" / "mcp_tool_server.py"


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    path = tmp_path / "host"
    path.mkdir()
    return path


@pytest.fixture
def jp_server_config(jp_server_config: Config, marker: Path) -> Config:
    """The shared server settings, with one MCP server whose marker is this test's."""
    jp_server_config.CodeAgent.mcp_servers = [f"fx={sys.executable} {SERVER} {marker}"]
    return jp_server_config


def servers_running() -> list[str]:
    return [cmd for cmd in descendants().values() if str(SERVER) in cmd]


async def test_a_call_waits_for_the_user_runs_on_the_host_and_the_server_stops_with_the_session(
    api: Api, scripted_model: Any, marker: Path
) -> None:
    scripted_model.set_script([tool_calls(("mcp__fx__note", {"text": "hi"})), text("noted")])
    session = await api.start("take a note")
    sid = session["id"]
    assert len(servers_running()) == 1
    ws = await api.connect(sid)
    asked = await api.read_until(ws, lambda e: e["type"] == "approval_requested")
    offered = [t["function"]["name"] for t in scripted_model.requests[0]["tools"]]
    assert {"mcp__fx__add", "mcp__fx__note"} <= set(offered)
    assert asked[-1]["name"] == "mcp__fx__note" and asked[-1]["arguments"] == {"text": "hi"}
    assert not (marker / "note.txt").exists()  # nothing ran before the user said yes
    await api.ok("POST", f"sessions/{sid}/approvals/{asked[-1]['tool_call_id']}", {"approve": True})
    events = await api.read_until(ws, lambda e: e["type"] == "run_finished", into=asked)
    ws.close()
    assert events[-1]["status"] == "answered"
    assert (marker / "note.txt").read_text() == "hi"
    shown = [m for m in scripted_model.requests[1]["messages"] if m["role"] == "tool"][-1]
    assert "noted 2 characters" in shown["content"]

    await api.ok("DELETE", f"sessions/{sid}")
    for _ in range(50):
        if not servers_running():
            break
        await asyncio.sleep(0.1)
    assert servers_running() == []
