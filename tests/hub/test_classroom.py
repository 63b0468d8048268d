"""A class on a real JupyterHub: students reach the provider only through the gateway.

The tests share one hub and run in order (sessions first, then quota, switches, report,
restart): each leaves the ledger as the next one expects.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import signal
import sqlite3
from typing import Any

import openai
import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from tests.hub.real_hub import CLASS_KEY, GATEWAY, Hub, environ_of, environment, server_pid
from tests.server.helpers import descendants

pytestmark = pytest.mark.timeout(240)


def session_call(hub: Hub, user: str, method: str, path: str, body: Any = None) -> Any:
    """A call to the student's own server as the panel makes it (REST, student's token)."""
    url = f"{hub.url}/user/{user}/codeagent/api/{path}"
    headers = {"Authorization": f"token {hub.login(user)}"}
    response = hub.client.request(method, url, headers=headers, json=body)
    assert response.status_code < 300, f"{method} {path}: {response.status_code} {response.text}"
    return response.json()


async def events_until_finished(hub: Hub, user: str, session: str, since: int = 0) -> list[Any]:
    """The session's events over its WebSocket, up to the end of the run."""
    url = f"ws://127.0.0.1:{hub.port}/user/{user}/codeagent/api/sessions/{session}/events"
    request = HTTPRequest(
        f"{url}?since={since}", headers={"Authorization": f"token {hub.login(user)}"}
    )
    ws = await websocket_connect(request)
    events: list[Any] = []
    try:
        while True:
            message = await asyncio.wait_for(ws.read_message(), 90)
            assert message is not None, f"stream closed early after {events[-3:]}"
            events.append(json.loads(message))
            if events[-1]["type"] == "run_finished":
                return events
    finally:
        ws.close()


def usage(hub: Hub, token: str, fmt: str = "json") -> Any:
    response = hub.gateway("GET", f"usage?format={fmt}", token)
    assert response.status_code == 200, response.text
    return response.json() if fmt == "json" else response.text


def test_sessions_reach_the_provider_only_through_the_gateway(hub: Hub) -> None:
    hub.write_policy(instructions="Cite the course notes by section.")  # the class's
    for user in ("alice", "bob"):
        hub.start_server(user)
    started = hub.upstream.server.requests.__len__()

    async def run(user: str) -> list[Any]:
        session = session_call(hub, user, "POST", "sessions", {"prompt": "use a tool"})
        hub.sessions[user] = session["id"]
        return await events_until_finished(hub, user, session["id"])

    async def both() -> list[list[Any]]:
        return list(await asyncio.gather(run("alice"), run("bob")))

    for events in asyncio.run(both()):
        config = next(e for e in events if e["type"] == "run_started")["config"]
        assert config["extra_context"]["instruction_files"] == ["class instructions (33 bytes)"]
        finished = events[-1]
        assert finished["status"] == "answered", finished
        assert finished["answer"] == "done: the class gateway answered"
        outputs = json.dumps(
            [e for e in events if e["type"] in ("cell_output", "tool_call_finished")]
        )
        assert "42" in outputs  # the sandbox ran the model's cell

    # The class's instructions reached every student's system message.
    systems = [r["messages"][0]["content"] for r in hub.upstream.server.requests[started:]]
    assert all("### class instructions\nCite the course notes by section." in s for s in systems)
    hub.write_policy()
    # Every request reached the provider with the class key and nothing of a student's.
    headers = hub.upstream.server.headers[started:]
    assert len(headers) == 4 and all(h["authorization"] == f"Bearer {CLASS_KEY}" for h in headers)
    # The ledger knows the agent session of each request (the X-Codeagent-Session header of
    # the student's server); the provider is not told.
    with sqlite3.connect(hub.ledger_path) as db:
        rows = set(db.execute("SELECT user, session FROM usage").fetchall())
    assert rows == {("alice", hub.sessions["alice"]), ("bob", hub.sessions["bob"])}
    assert not any("x-codeagent-session" in {k.lower() for k in h} for h in headers)
    per_student = {s["user"]: s["sessions"] for s in usage(hub, hub.login("carol"))["students"]}
    assert per_student == {"alice": 1, "bob": 1}
    seen = json.dumps([hub.upstream.server.requests, hub.upstream.server.headers])
    for user in ("alice", "bob"):
        server_token = environment(server_pid(user))["JUPYTERHUB_API_TOKEN"]
        assert server_token not in seen and hub.login(user) not in seen

    # No process of a student's server (the server, its sandbox kernels) holds the class key.
    for user in ("alice", "bob"):
        pid = server_pid(user)
        family = {pid: "server", **descendants(pid)}
        assert any("codeagent_jupyter.sandbox" in cmd for cmd in family.values()), family
        leaked = [cmd for p, cmd in family.items() if CLASS_KEY.encode() in environ_of(p)]
        assert leaked == []

    # The model info the panel shows: the gateway as endpoint, no key.
    health = session_call(hub, "alice", "GET", "health")
    assert f"/services/{GATEWAY}/v1" in json.dumps(health)
    assert CLASS_KEY not in json.dumps(health)


def test_requests_without_a_valid_token_are_refused(hub: Hub) -> None:
    before = len(hub.upstream.server.requests)
    assert hub.chat(None).status_code == 401
    forged = hub.chat("forged-token-0123456789")
    assert forged.status_code == 401 and "not valid" in forged.json()["error"]["message"]
    narrow = hub.token("bob", scopes=["read:users:name!user=bob"])
    refused = hub.chat(narrow)
    assert refused.status_code == 403 and f"service={GATEWAY}" in refused.text
    assert hub.gateway("GET", "v1/models", None).status_code == 401
    assert len(hub.upstream.server.requests) == before


def test_streaming_passes_through(hub: Hub) -> None:
    client = openai.OpenAI(base_url=f"{hub.gateway_url}/v1", api_key=hub.login("bob"))
    chunks = list(
        client.chat.completions.create(
            model="scripted", messages=[{"role": "user", "content": "hi"}], stream=True
        )
    )
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert content == "done: the class gateway answered"
    assert len(chunks) > 3 and all(c.usage is None for c in chunks)  # usage was not asked for
    # The provider was asked for usage all the same, so the ledger counts real tokens.
    assert hub.upstream.server.requests[-1]["stream_options"] == {"include_usage": True}
    with_usage = list(
        client.chat.completions.create(
            model="scripted",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert with_usage[-1].usage is not None and with_usage[-1].usage.completion_tokens == 9


def test_a_model_outside_the_class_list_is_refused(hub: Hub) -> None:
    client = openai.OpenAI(base_url=f"{hub.gateway_url}/v1", api_key=hub.login("bob"))
    with pytest.raises(openai.PermissionDeniedError) as refused:
        client.chat.completions.create(
            model="gpt-secret", messages=[{"role": "user", "content": "hi"}]
        )
    assert refused.value.status_code == 403
    assert refused.value.body["message"] == "model gpt-secret is not allowed in this class"
    listed = [m.id for m in client.models.list()]
    assert listed == ["scripted", "scripted-mini"]


def test_a_used_up_quota_stops_that_student_only(hub: Hub) -> None:
    carol = hub.login("carol")
    used = {s["user"]: s["total_tokens"] for s in usage(hub, carol)["students"]}
    hub.write_policy(users={"alice": {"daily_tokens": used["alice"]}})

    async def follow_up(user: str) -> dict[str, Any]:
        session = hub.sessions[user]
        seq = session_call(hub, user, "GET", f"sessions/{session}")["events"][-1]["seq"]
        session_call(hub, user, "POST", f"sessions/{session}/messages", {"text": "and now?"})
        return (await events_until_finished(hub, user, session, since=seq + 1))[-1]

    alice = asyncio.run(follow_up("alice"))
    message = f"daily token quota of {used['alice']} used up (resets at 00:00 UTC)"
    assert alice["status"] != "answered" and message in alice["reason"], alice
    assert "attempt" not in alice["reason"] or "1 attempt" in alice["reason"]  # not retried
    bob = asyncio.run(follow_up("bob"))
    assert bob["status"] == "answered", bob
    refused = hub.chat(hub.login("alice"))
    assert refused.status_code == 429 and refused.json()["error"]["message"] == message


def test_the_ai_switch_applies_to_the_next_request(hub: Hub) -> None:
    dave, bob, carol = hub.login("dave"), hub.login("bob"), hub.login("carol")
    off = "AI is switched off for this class by the instructor"
    assert hub.chat(dave).status_code == 200
    flipped = hub.gateway("POST", "switch", carol, json={"group": "exam-room", "enabled": False})
    assert flipped.status_code == 200, flipped.text
    refused = hub.chat(dave)
    assert refused.status_code == 403 and refused.json()["error"]["message"] == off
    assert hub.chat(bob).status_code == 200  # not in the exam room
    # A student cannot flip it back.
    assert hub.gateway("POST", "switch", dave, json={"enabled": True}).status_code == 403
    hub.gateway("POST", "switch", carol, json={"group": "exam-room", "enabled": True})
    assert hub.chat(dave).status_code == 200
    # The policy file switches the whole class, on its next request too.
    hub.write_policy(ai_enabled=False)
    assert hub.chat(bob).json()["error"]["message"] == off
    hub.write_policy()
    assert hub.chat(bob).status_code == 200


def test_usage_is_for_instructors_only(hub: Hub) -> None:
    for student in ("alice", "bob"):
        response = hub.gateway("GET", "usage", hub.login(student))
        assert response.status_code == 403
        assert hub.gateway("GET", "usage.csv", hub.login(student)).status_code == 403
    assert hub.gateway("GET", "usage", None).status_code == 401
    page = hub.gateway("GET", "", hub.login("carol"))
    assert page.status_code == 200 and "<svg" in page.text and "<td>alice</td>" in page.text
    browser = hub.client.get(f"{hub.gateway_url}/", follow_redirects=False)
    assert browser.status_code == 302 and "/hub/api/oauth2/authorize" in browser.headers["location"]


def test_ledger_totals_match_the_provider_and_survive_a_restart(hub: Hub) -> None:
    carol = hub.login("carol")
    rows = list(csv.DictReader(io.StringIO(usage(hub, carol, "csv"))))
    assert {r["user"] for r in rows} >= {"alice", "bob", "dave"}
    assert sum(int(r["total_tokens"]) for r in rows) == hub.upstream.total()
    assert all(float(r["cost"]) > 0 for r in rows)
    alice = next(int(r["total_tokens"]) for r in rows if r["user"] == "alice")
    hub.write_policy(users={"alice": {"daily_tokens": alice}})

    old = hub.admin("GET", f"/services/{GATEWAY}").json()["pid"]
    os.kill(old, signal.SIGTERM)
    hub.wait_for(
        lambda: (
            hub.admin("GET", f"/services/{GATEWAY}").json()["pid"] not in (0, old)
            and hub.client.get(f"{hub.gateway_url}/health").status_code == 200
        ),
        "the restarted gateway",
        timeout=60,
    )
    again = list(csv.DictReader(io.StringIO(usage(hub, carol, "csv"))))
    assert again == rows
    assert hub.chat(hub.login("bob")).status_code == 200
    after = list(csv.DictReader(io.StringIO(usage(hub, carol, "csv"))))
    assert sum(int(r["total_tokens"]) for r in after) == hub.upstream.total()
    # Quotas read the same ledger: alice is still stopped after the restart.
    assert hub.chat(hub.login("alice")).status_code == 429


def test_the_class_egress_policy_is_each_students_ceiling(hub: Hub) -> None:
    egress = {"allow": ["*.opendata.org"], "default": "deny", "methods": ["GET", "CONNECT"]}
    hub.write_policy(egress=egress)
    assert hub.gateway("GET", "v1/egress", hub.login("bob")).json() == {"egress": egress}
    assert hub.gateway("GET", "v1/egress", None).status_code == 401
    # A server started now reads it: its own settings (none here) can only narrow it.
    hub.start_server("dave")
    sandbox = session_call(hub, "dave", "GET", "health")["sandbox"]
    got = sandbox["egress"]
    assert (got["allow"], got["default"], got["methods"]) == (
        ["*.opendata.org"],
        "deny",
        egress["methods"],
    )
    hub.write_policy()
