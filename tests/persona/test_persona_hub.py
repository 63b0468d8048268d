"""``@codeagent`` in Jupyter AI's chat on a JupyterHub: the model is the class gateway's.

A real hub (tests/hub/real_hub.py) runs the classroom gateway as its service and the
scripted provider behind it, which accepts only the class key; the student's single-user
server has Jupyter AI installed beside our extension, so its chat has the persona. The chat
is driven over jupyterlab_chat's WebSocket through the hub's proxy, as the student's
JupyterLab drives it. The student's server is given no model, no endpoint and no key: it
finds the gateway itself, and the class default it lists is the model. Skipped without
Jupyter AI (unless ``CODEAGENT_JUPYTER_AI_TESTS=required``) or without jupyterhub and
configurable-http-proxy (unless ``CODEAGENT_HUB_TESTS=required``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from collections.abc import Iterator
from typing import Any

import pytest

from tests.hub.real_hub import CLASS_KEY, GATEWAY, Hub, environment, running_hub, server_pid
from tests.persona.server import (
    PERSONA_ID,
    ChatClient,
    PersonaEvents,
    jupyter_ai_missing,
    request,
)
from tests.server.helpers import descendants

REQUIRED = os.environ.get("CODEAGENT_JUPYTER_AI_TESTS") == "required"
pytestmark = [
    pytest.mark.skipif(
        jupyter_ai_missing() is not None and not REQUIRED, reason=str(jupyter_ai_missing())
    ),
    pytest.mark.hub,
    pytest.mark.timeout(300),
]
STUDENT = "alice"
CLASS_MODEL = "scripted-mini"
"""The class default in the gateway's policy: the model the student's server finds."""
CHAT_PICK = "scripted"
"""A model the class allows too, which a chat message asks for: the persona must not take it."""


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hub]:
    missing = jupyter_ai_missing()
    if missing is not None:  # only where the CI lane promises Jupyter AI
        pytest.fail(missing, pytrace=False)
    yield from running_hub(tmp_path_factory.mktemp("hub-persona"), students=(STUDENT,))


def finished(count: int) -> Any:
    """``done`` for ``ChatClient.until``: ``count`` runs have written their last line."""
    return lambda c: sum("codeagent-chat-end" in m["body"] for m in c.from_persona()) >= count


def bodies(messages: list[dict[str, Any]]) -> str:
    return "\n\n".join(m["body"] for m in messages)


async def test_the_persona_takes_its_model_from_the_class_gateway(hub: Hub) -> None:
    # The policy names the class default before the student's server starts (it asks the
    # gateway's v1/models once, at start); the server's own config names no model.
    hub.write_policy(default_model=CLASS_MODEL)
    hub.start_server(STUDENT)
    base_url, token = f"{hub.url}/user/{STUDENT}/", hub.login(STUDENT)
    path = "class.chat"
    empty = {"type": "file", "format": "text", "content": ""}
    status, _ = request(base_url, token, "PUT", f"api/contents/{path}", empty)
    assert status == 201, status

    before = len(hub.upstream.server.requests)
    events = await PersonaEvents.connect(base_url, token)
    client = await ChatClient.connect(base_url, token, path)
    try:
        await client.until(lambda c: PERSONA_ID in c.users, timeout=60)
        client.send("@codeagent use a tool")
        await client.until(finished(1))
        # The chat was told the persona's model before any message named one.
        assert [m["current"] for m in events.models()][:1] == [CLASS_MODEL], events.models()
        # A follow-up whose message asks for another model (Jupyter AI's model picker
        # carries it in the message's metadata): the run keeps the server's model.
        client.send(
            "@codeagent and now?", metadata={"to_persona": PERSONA_ID, "model": {"id": CHAT_PICK}}
        )
        await client.until(finished(2))
        await asyncio.sleep(0.5)  # the persona's state events of the second run, if any
    finally:
        client.close()
        events.close()
    # What the chat shows as the persona's model is the server's, not the chat's pick.
    published = events.models()
    assert published and all(m["current"] == CLASS_MODEL for m in published), published
    assert [o["id"] for o in published[-1]["options"]] == [CLASS_MODEL]

    # The reply and the cell, as the chat document on the student's server holds them.
    status, model = request(base_url, token, "GET", f"api/contents/{path}?type=file&format=text")
    assert status == 200, model
    messages = json.loads(model["content"])["messages"]
    saved = bodies([m for m in messages if m["sender"] == PERSONA_ID])
    assert f"model <code>{CLASS_MODEL}</code>" in saved  # what the chat is told answers it
    assert "print(6 * 7)" in saved and ">42" in saved  # the model's cell, run in the sandbox
    assert saved.count("done: the class gateway answered") == 2  # both answers, via the gateway

    # Every request reached the provider through the gateway: with the class key, for the
    # class default, never the model the chat asked for.
    requests, headers = hub.upstream.server.requests[before:], hub.upstream.server.headers[before:]
    assert len(requests) == 3, requests  # the tool call, its answer, the follow-up's answer
    assert {r["model"] for r in requests} == {CLASS_MODEL}
    assert all(h["authorization"] == f"Bearer {CLASS_KEY}" for h in headers)

    # The gateway authenticated the student and booked each request to the persona's session.
    status, sessions = request(base_url, token, "GET", "codeagent/api/sessions")
    assert status == 200, sessions
    (session,) = [s for s in sessions if s["prompt"] == "use a tool"]
    assert session["model"] == CLASS_MODEL and session["status"] == "answered", session
    with sqlite3.connect(hub.ledger_path) as db:
        rows = db.execute("SELECT user, session, model, status FROM usage").fetchall()
    assert rows == [(STUDENT, session["id"], CLASS_MODEL, 200)] * 3

    # The student's server holds no provider key: its key is its own hub token, which the
    # gateway checked and the provider never saw; no process of it holds the class key.
    pid = server_pid(STUDENT)
    env = environment(pid)
    assert "OPENAI_API_KEY" not in env and "CODEAGENT_GATEWAY_API_KEY" not in env
    seen = json.dumps([requests, headers])
    assert env["JUPYTERHUB_API_TOKEN"] not in seen and token not in seen
    family = {pid: "server", **descendants(pid)}
    assert any("codeagent_jupyter.sandbox" in cmd for cmd in family.values()), family
    assert [cmd for p, cmd in family.items() if CLASS_KEY in json.dumps(environment(p))] == []
    status, health = request(base_url, token, "GET", "codeagent/api/health")
    assert status == 200 and f"/services/{GATEWAY}/v1" in json.dumps(health), health
