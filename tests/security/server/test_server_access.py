"""Other users' sessions, oversized and non-finite requests: the attacks that used to work.

One real server with a real identity provider naming alice, bob and carol (an instructor);
the scripted model is the only stand-in.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from tests.scripted_model import text, tool_calls
from tests.security.server.conftest import TokenUsers, as_user
from tests.server.helpers import Api, of_type

ALICE, BOB, CAROL = as_user("alice-token"), as_user("bob-token"), as_user("carol-token")
users = pytest.mark.server_app(identity_provider_class=TokenUsers)


async def _ws(api: Api, sid: str, headers: dict[str, str]) -> Any:
    return await api.ws_fetch("codeagent", "api", "sessions", sid, "events", headers=headers)


async def _ws_status(api: Api, sid: str, headers: dict[str, str]) -> int:
    try:
        ws = await _ws(api, sid, headers)
    except HTTPClientError as e:
        return e.code
    ws.close()
    return 101


@users
# allow_unconfined: these tests are about access, not isolation, so they run in the CI lane
# without bubblewrap too (where bubblewrap works it is used all the same).
@pytest.mark.codeagent(
    read_groups=["instructors"], approval={"write_file": "ask"}, allow_unconfined=True
)
async def test_sessions_belong_to_their_owner(api: Api, scripted_model: Any) -> None:
    scripted_model.set_script(
        [
            tool_calls(("run_cell", {"code": "x = 1"})),
            tool_calls(("write_file", {"path": "a.txt", "content": "waits for approval"})),
            text("done"),
        ]
    )
    session = await api.call("POST", "sessions", {"prompt": "alice's work"}, headers=ALICE)
    assert session[0] == 201, session
    sid = session[1]["id"]
    ws = await _ws(api, sid, ALICE)
    events = await api.read_until(ws, lambda e: e["type"] == "approval_requested")
    ws.close()
    cell = of_type(events, "tool_call_finished")[0]["tool_call_id"]
    waiting = events[-1]["tool_call_id"]
    requests_before = len(scripted_model.requests)

    s = f"sessions/{sid}"
    changes = [
        ("POST", f"{s}/messages", {"text": "bob was here"}),
        ("POST", f"{s}/cancel", None),
        ("POST", f"{s}/approvals/{waiting}", {"approve": True}),
        ("POST", f"{s}/cells/{cell}/accept", None),
        ("POST", f"{s}/cells/{cell}/reject", None),
        ("DELETE", s, None),
    ]
    reads = [("GET", s, None), ("GET", f"{s}/notebook", None)]
    for method, path, body in reads + changes:
        code, reply = await api.call(method, path, body, headers=BOB)
        assert code == 404, f"bob: {method} {path} -> {code} {reply}"
        assert reply["message"] == f"no session {sid}"  # the same as for an unknown id
    assert await _ws_status(api, sid, BOB) == 404
    assert await api.call("GET", "sessions", headers=BOB) == (200, [])

    # carol reads as an instructor, and changes nothing
    code, listed = await api.call("GET", "sessions", headers=CAROL)
    assert code == 200 and [x["id"] for x in listed] == [sid]
    assert (await api.call("GET", s, headers=CAROL))[0] == 200
    assert (await api.call("GET", f"{s}/notebook", headers=CAROL))[0] == 200
    watch = await _ws(api, sid, CAROL)
    seen = await api.read_until(watch, lambda e: e["type"] == "approval_requested")
    watch.close()
    assert seen == events
    for method, path, body in changes:
        code, reply = await api.call(method, path, body, headers=CAROL)
        assert code == 403, f"carol: {method} {path} -> {code} {reply}"

    # nothing of that reached the session: still waiting, owned by alice, model not asked
    code, detail = await api.call("GET", s, headers=ALICE)
    assert code == 200 and detail["owner"] == "alice"
    assert detail["state"] == "running" and detail["pending_approvals"] == [waiting]
    assert of_type(detail["events"], "cell_decision") == []
    assert len(scripted_model.requests) == requests_before
    # alice herself can do all of it
    assert (await api.call("POST", f"{s}/cells/{cell}/accept", headers=ALICE))[0] == 200
    assert (await api.call("DELETE", s, headers=ALICE))[0] == 200
    assert await api.call("GET", "sessions", headers=BOB) == (200, [])


@users
@pytest.mark.codeagent(allow_unconfined=True)
async def test_each_user_lists_only_their_own(api: Api, scripted_model: Any) -> None:
    scripted_model.set_script(lambda messages: text("hi"))
    mine = await api.call("POST", "sessions", {"prompt": "bob's"}, headers=BOB)
    assert mine[0] == 201
    code, listed = await api.call("GET", "sessions", headers=ALICE)
    assert (code, listed) == (200, [])
    code, listed = await api.call("GET", "sessions", headers=CAROL)  # no read group configured
    assert (code, listed) == (200, [])
    code, listed = await api.call("GET", "sessions", headers=BOB)
    assert [x["id"] for x in listed] == [mine[1]["id"]]
    assert (await api.call("GET", f"sessions/{mine[1]['id']}", headers=CAROL))[0] == 404
    await api.call("DELETE", f"sessions/{mine[1]['id']}", headers=BOB)


@pytest.mark.codeagent(
    limits={"cell_timeout": 20, "memory_mb": 1024}, max_steps=5, allow_unconfined=True
)
async def test_limits_and_steps_must_be_finite_and_capped(api: Api, scripted_model: Any) -> None:
    refused = [
        '{"prompt": "x", "limits": {"cell_timeout": NaN}}',
        '{"prompt": "x", "limits": {"cell_timeout": Infinity}}',
        '{"prompt": "x", "limits": {"cell_timeout": -Infinity}}',
        '{"prompt": "x", "limits": {"cell_timeout": 1e999}}',
        '{"prompt": "x", "limits": {"memory_mb": NaN}}',
        '{"prompt": "x", "limits": {"cell_timeout": 21}}',
        '{"prompt": "x", "limits": {"memory_mb": 4096}}',
        '{"prompt": "x", "limits": {"output_bytes": 1e12}}',
        '{"prompt": "x", "limits": {"network": true}}',
        '{"prompt": "x", "limits": {"cell_timeout": 0}}',
        '{"prompt": "x", "limits": {"cell_timeout": "5"}}',
        '{"prompt": "x", "limits": {"wall_s": 5}}',
        '{"prompt": "x", "limits": []}',
        '{"prompt": "x", "max_steps": 6}',
        '{"prompt": "x", "max_steps": 0}',
        '{"prompt": "x", "max_steps": NaN}',
        '{"prompt": "x", "max_steps": 1e999}',
    ]
    for raw in refused:
        code, body = await api.call("POST", "sessions", raw=raw)
        assert code == 400, f"{raw} -> {code} {body}"
        assert "\n" not in body["message"] and body["message"], raw
    assert scripted_model.requests == []
    assert (await api.ok("GET", "sessions")) == []


@pytest.mark.codeagent(max_prompt_chars=1000, allow_unconfined=True)
async def test_prompts_are_capped(api: Api, scripted_model: Any) -> None:
    for prompt in ("x" * 1001, "é" * 1001, "y" * 3_000_000):
        code, body = await api.call("POST", "sessions", {"prompt": prompt})
        assert code == 413, (len(prompt), code)
        assert "\n" not in body["message"]
    assert scripted_model.requests == []
    assert (await api.ok("GET", "sessions")) == []

    scripted_model.set_script([text("hi")])
    sid = (await api.start("x" * 1000))["id"]  # exactly the cap is fine
    await api.run_to_end(sid)
    code, body = await api.call("POST", f"sessions/{sid}/messages", {"text": "z" * 1001})
    assert code == 413 and "1000" in body["message"]
    assert len(scripted_model.requests) == 1
    assert "z" * 100 not in json.dumps(scripted_model.requests)
