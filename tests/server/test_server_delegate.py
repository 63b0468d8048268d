"""The ``delegate`` tool on the server: off by default; on, helpers run in sandboxes from the
server's supply, their events reach the WebSocket under the delegate call, and cancelling
the session stops every helper's kernel."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.scripted_model import text
from tests.server.helpers import Api, descendants
from tests.tools.test_delegate import TASKS, _responder


def helper_kernels() -> list[int]:
    """Processes of this server working in a helper's workspace (their kernels)."""
    found = []
    for pid in descendants():
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if "/codeagent-helper-" in cwd:
            found.append(pid)
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_delegate_limits_must_not_be_negative() -> None:
    from codeagent_jupyter.server.app import CodeAgent

    assert CodeAgent().delegate_max_per_call == 0  # off unless the administrator says so
    for name in ("delegate_max_per_call", "delegate_max_total", "delegate_max_steps"):
        with pytest.raises(ValueError, match=f"{name} must not be negative"):
            CodeAgent(**{name: -1})


async def test_no_delegate_tool_unless_the_administrator_enables_it(
    api: Api, scripted_model: Any
) -> None:
    scripted_model.set_script([text("hi")])
    sid = (await api.start("hello"))["id"]
    await api.run_to_end(sid)
    assert "delegate" not in json.dumps(scripted_model.requests[0]["tools"])


@pytest.mark.codeagent(delegate_max_per_call=3, delegate_max_total=3)
async def test_helpers_stream_under_the_call_and_cancel_stops_them(
    api: Api, scripted_model: Any
) -> None:
    scripted_model.set_script(_responder(sleep=120))
    sid = (await api.start("split the work"))["id"]
    ws = await api.connect(sid)
    events: list[dict[str, Any]] = []
    running: set[str] = set()

    def three_cells_running(event: dict[str, Any]) -> bool:
        inner = event.get("event", {})
        if event["type"] == "child_event" and inner.get("type") == "tool_call_started":
            running.add(event["child"])
        return len(running) == 3

    await api.read_until(ws, three_cells_running, timeout=180, into=events)
    kernels = helper_kernels()
    assert len(kernels) >= 3  # one sandbox each, from the server's supply
    delegate = next(e for e in events if e["type"] == "tool_call_started")
    assert delegate["name"] == "delegate" and delegate["arguments"] == {"tasks": TASKS}
    children = [e for e in events if e["type"] == "child_event"]
    assert {e["parent_tool_call_id"] for e in children} == {delegate["tool_call_id"]}
    assert {e["child"] for e in children} == {"1-1", "1-2", "1-3"}
    assert {e["event"]["type"] for e in children} >= {"run_started", "tool_call_started"}

    cancelled = await api.ok("POST", f"sessions/{sid}/cancel")
    assert cancelled["cancelled"] is True
    await api.read_until(ws, lambda e: e["type"] == "run_finished", timeout=60, into=events)
    ws.close()
    inner = [e["event"] for e in events if e["type"] == "child_event"]
    ended = [e["status"] for e in inner if e["type"] == "run_finished"]
    assert sorted(ended) == ["cancelled"] * 3  # every helper's run was stopped
    assert events[-1]["status"] == "cancelled"
    for _ in range(60):  # kernels are shut down before the run ends; reaping may lag
        if not any(alive(pid) for pid in kernels):
            break
        await asyncio.sleep(0.5)
    assert [pid for pid in kernels if alive(pid)] == []
    assert helper_kernels() == []
    detail = await api.ok("GET", f"sessions/{sid}")
    assert detail["state"] == "idle"  # the session itself lives on
