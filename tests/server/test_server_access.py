"""Resume, fork and pause are changes: other users get 404, a read group 403, as elsewhere."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.scripted_model import text, tool_calls
from tests.security.server.conftest import TokenUsers, as_user
from tests.server.helpers import Api

ALICE, BOB, CAROL = as_user("alice-token"), as_user("bob-token"), as_user("carol-token")


@pytest.mark.server_app(identity_provider_class=TokenUsers)
@pytest.mark.codeagent(read_groups=["instructors"], allow_unconfined=True)
async def test_only_the_owner_resumes_forks_or_pauses(api: Api, scripted_model: Any) -> None:
    scripted_model.set_script([tool_calls(("run_cell", {"code": "x = 1"})), text("done")])
    code, session = await api.call("POST", "sessions", {"prompt": "alice's"}, headers=ALICE)
    assert code == 201
    sid = session["id"]
    for _ in range(300):
        detail = (await api.call("GET", f"sessions/{sid}", headers=ALICE))[1]
        if detail["status"] == "answered":
            break
        await asyncio.sleep(0.1)
    assert (await api.call("POST", f"sessions/{sid}/pause", headers=ALICE))[0] == 200
    requests_before = len(scripted_model.requests)
    changes = [
        ("POST", f"sessions/{sid}/messages", {"text": "resume it"}),
        ("POST", f"sessions/{sid}/fork", {"prompt": "fork it", "step": 1}),
        ("POST", f"sessions/{sid}/pause", None),
    ]
    for method, path, body in changes:
        code, reply = await api.call(method, path, body, headers=BOB)
        assert code == 404 and reply["message"] == f"no session {sid}", (path, code, reply)
        code, reply = await api.call(method, path, body, headers=CAROL)
        assert code == 403, (path, code, reply)
    assert len(scripted_model.requests) == requests_before  # nothing was resumed
    code, listed = await api.call("GET", "sessions", headers=ALICE)
    assert [s["id"] for s in listed] == [sid] and listed[0]["state"] == "closed"
