"""The session cap never blocks the user: one more session closes the oldest idle one.

Real server, real sandboxes, the scripted model. A closed-for-room session keeps its
notebook and snapshots and is resumed by a message; only when every open session is
running is a new one refused (429). ``GET sessions`` carries what a list of sessions shows.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from tests.scripted_model import text, tool_calls
from tests.server.helpers import Api, descendants

LAUNCHER = "codeagent_jupyter.sandbox.launcher"


def script(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """``spin …`` runs an endless cell (until cancelled); anything else is answered."""
    if messages[-1]["role"] == "tool":
        return text("stopped")
    if "spin" in json.dumps(messages[-1]):
        return tool_calls(("run_cell", {"code": "while True: pass"}))
    return text("hi")


def sandboxes() -> int:
    """Sandbox kernels started by this (in-process) server (by connection file: bubblewrap
    adds two processes of its own around each)."""
    return len({cmd.rsplit(" -f ", 1)[-1] for cmd in descendants().values() if LAUNCHER in cmd})


async def listed(api: Api) -> dict[str, dict[str, Any]]:
    return {s["id"]: s for s in await api.ok("GET", "sessions")}


async def running(api: Api, session_id: str) -> None:
    ws = await api.connect(session_id)
    await api.read_until(ws, lambda e: e["type"] == "tool_call_started")
    ws.close()


@pytest.mark.codeagent(max_sessions_per_user=2)
async def test_one_more_session_closes_the_oldest_idle_one(api: Api, scripted_model: Any) -> None:
    scripted_model.set_script(script)
    first = await api.start("one")
    await api.run_to_end(first["id"])
    second = await api.start("two")
    await api.run_to_end(second["id"])
    assert sandboxes() == 2

    third = await api.start("three\nwith more lines")  # the fifth %agent of the issue
    await api.run_to_end(third["id"])
    sessions = await listed(api)
    assert sessions[first["id"]]["state"] == "closed"
    assert sessions[first["id"]]["closed_reason"] == "session_cap"
    assert sessions[first["id"]]["resumable"] is True
    assert sessions[second["id"]]["state"] == "idle"
    assert sessions[second["id"]]["closed_reason"] is None
    entry = sessions[third["id"]]
    assert entry["title"] == "three" and entry["prompt"] == "three\nwith more lines"
    assert entry["busy"] is False and entry["status"] == "answered"
    assert entry["created"] <= entry["updated"]
    assert sandboxes() == 2  # the closed session's kernel is gone
    assert (await api.ok("GET", "health"))["sessions"]["open"] == 2

    # A message resumes the closed session, closing the oldest idle one (two) for room.
    code, body = await api.call("POST", f"sessions/{first['id']}/messages", {"text": "again"})
    assert code == 202, body
    events = await api.run_to_end(first["id"], since=body["next_seq"])
    assert events[-1]["status"] == "answered"
    sessions = await listed(api)
    assert sessions[first["id"]]["state"] == "idle"
    assert sessions[first["id"]]["closed_reason"] is None
    assert sessions[second["id"]]["closed_reason"] == "session_cap"
    assert sessions[third["id"]]["state"] == "idle"
    assert sandboxes() == 2


@pytest.mark.codeagent(max_sessions_per_user=2)
async def test_only_running_sessions_refuse_a_new_one(api: Api, scripted_model: Any) -> None:
    scripted_model.set_script(script)
    first = await api.start("spin one")
    second = await api.start("spin two")
    for session in (first, second):
        await running(api, session["id"])
    code, body = await api.call("POST", "sessions", {"prompt": "three"})
    assert code == 429, body
    assert "all 2 of your open sessions are running" in body["message"]
    assert "\n" not in body["message"]
    assert all(s["busy"] for s in (await listed(api)).values())

    await api.ok("POST", f"sessions/{first['id']}/cancel")
    ended = await api.run_to_end(first["id"])
    assert ended[-1]["status"] == "cancelled"
    third = await api.start("three")  # the stopped session made room, not the running one
    sessions = await listed(api)
    assert sessions[first["id"]]["closed_reason"] == "session_cap"
    assert sessions[second["id"]]["state"] == "running"
    assert sessions[third["id"]]["state"] in ("running", "idle")
    await api.ok("POST", f"sessions/{second['id']}/cancel")


@pytest.mark.codeagent(max_sessions_per_user=2)
async def test_sessions_started_together_stay_within_the_cap(api: Api, scripted_model: Any) -> None:
    scripted_model.set_script(script)
    for prompt in ("one", "two"):
        session = await api.start(prompt)
        await api.run_to_end(session["id"])
    started = await asyncio.gather(*(api.start(p) for p in ("three", "four")))
    for session in started:
        await api.run_to_end(session["id"])
    sessions = await listed(api)
    open_ones = {sid for sid, s in sessions.items() if s["state"] != "closed"}
    assert open_ones == {s["id"] for s in started}
    assert sandboxes() == 2
