"""``@codeagent`` in Jupyter AI's chat, against a real Jupyter server with Jupyter AI 3.2.

The server loads Jupyter AI's extensions (persona manager, router, chat, MCP server) and
ours from their jupyter-config files; the chat is driven over jupyterlab_chat's own
WebSocket, as JupyterLab's chat panel drives it; the model is the scripted server, set in
``c.CodeAgent`` (the chat never names one). What the persona wrote is read back from the
chat file through the contents API. Skipped without Jupyter AI, unless
``CODEAGENT_JUPYTER_AI_TESTS=required`` (the CI lane that installs it) makes that a failure.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.persona.server import (
    PERSONA_ID,
    ChatClient,
    jupyter_ai_missing,
    jupyter_server,
    request,
)
from tests.scripted_model import ScriptedModelServer, text, tool_calls
from tests.server.helpers import EXTENSION

REQUIRED = os.environ.get("CODEAGENT_JUPYTER_AI_TESTS") == "required"
pytestmark = pytest.mark.skipif(
    jupyter_ai_missing() is not None and not REQUIRED, reason=str(jupyter_ai_missing())
)


@pytest.fixture(scope="module", autouse=True)
def jupyter_ai() -> None:
    """Where the CI lane promises Jupyter AI, its absence fails instead of skipping."""
    missing = jupyter_ai_missing()
    if missing is not None:
        pytest.fail(missing, pytrace=False)


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer([]).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, model_server: ScriptedModelServer
) -> Iterator[tuple[str, str, Path, Path]]:
    config = {
        "ServerApp": {"jpserver_extensions": {EXTENSION: True}},
        "MCPExtensionApp": {"mcp_port": 0},  # a free port, not the fixed default 3001
        "CodeAgent": {
            "model": "scripted",
            "base_url": model_server.url,
            "api_key": "sk-persona-test",
            "pool_size": 1,
            "preload": [],
            "approval": {"write_file": "ask"},
            "limits": {"cell_timeout": 60, "memory_mb": 1024},
        },
    }
    with jupyter_server(tmp_path_factory.mktemp("persona"), config) as running:
        yield running


def new_chat(server: tuple[str, str, Path, Path], name: str) -> str:
    base_url, token, _root, _log = server
    path = f"{name}.chat"
    empty = {"type": "file", "format": "text", "content": ""}
    status, _ = request(base_url, token, "PUT", f"api/contents/{path}", empty)
    assert status == 201, status
    return path


def saved_messages(server: tuple[str, str, Path, Path], path: str) -> list[dict[str, Any]]:
    """The persona's messages as the chat file on the server holds them."""
    base_url, token, _root, _log = server
    status, model = request(base_url, token, "GET", f"api/contents/{path}?type=file&format=text")
    assert status == 200, model
    messages = json.loads(model["content"])["messages"]
    return [m for m in messages if m["sender"] == PERSONA_ID]


async def connected(server: tuple[str, str, Path, Path], path: str) -> ChatClient:
    """A chat client, once the persona has joined the chat (Jupyter AI adds its personas
    as users when the chat opens)."""
    base_url, token, _root, _log = server
    client = await ChatClient.connect(base_url, token, path)
    await client.until(lambda c: PERSONA_ID in c.users, timeout=60)
    return client


def bodies(messages: list[dict[str, Any]]) -> str:
    return "\n\n".join(m["body"] for m in messages)


def finished(count: int = 1) -> Any:
    """``done`` for ``ChatClient.until``: ``count`` runs have written their last line."""
    return lambda c: sum("codeagent-chat-end" in m["body"] for m in c.from_persona()) >= count


async def test_the_server_starts_with_jupyter_ai_and_codeagent(
    server: tuple[str, str, Path, Path],
) -> None:
    """Every extension loads; a chat that opens gets ``@codeagent`` as one of its users."""
    base_url, token, root, log = server
    status, health = request(base_url, token, "GET", "codeagent/api/health")
    assert status == 200, health
    text_log = log.read_text()
    for extension in (
        "jupyter_ai_persona_manager",
        "jupyter_ai_router",
        "jupyterlab_chat",
        "jupyter_server_mcp",
        EXTENSION,
    ):
        assert f"{extension} | extension was successfully loaded" in text_log, extension
    assert list((root.parent / "runtime").glob("jpserver-mcp-*.json")), "no MCP server started"
    client = await connected(server, new_chat(server, "hello"))
    client.close()
    persona = client.users[PERSONA_ID]
    assert persona["bot"] and persona["display_name"] == "codeagent"
    text_log = log.read_text()
    assert "Loaded AI persona class 'CodeAgentPersona'" in text_log
    assert "Unable to load AI persona" not in text_log
    status, avatar = request(base_url, token, "GET", persona["avatar_url"].lstrip("/"))
    assert status == 200 and "<svg" in avatar


async def test_the_persona_answers_with_its_cells_in_the_chat_document(
    server: tuple[str, str, Path, Path], model_server: ScriptedModelServer
) -> None:
    base_url, token, _root, _log = server
    plan = {"steps": [{"step": "multiply", "status": "in_progress"}]}
    model_server.set_script(
        [
            tool_calls(("update_plan", plan), ("run_cell", {"code": "x = 6 * 7\nprint(x)"})),
            text("The answer is **42**."),
            tool_calls(("run_cell", {"code": "print(x * 2)"})),
            text("Doubled: 84."),
        ]
    )
    path = new_chat(server, "ask")
    client = await connected(server, path)
    try:
        client.send("@codeagent what is six times seven?")
        await client.until(finished(1))
        said = bodies(client.from_persona())
        assert "Working on it in a sandbox" in said
        assert "multiply" in said  # the plan
        assert "x = 6 * 7\nprint(x)" in said  # the cell's code, in a fenced block
        assert "```python" in said
        assert ">42" in said  # its output
        assert "<strong>42</strong>" in said  # the answer, Markdown rendered
        # A follow-up runs in the same sandbox: x is still there.
        client.send("@codeagent and doubled?")
        await client.until(finished(2))
    finally:
        client.close()

    saved = bodies(saved_messages(server, path))
    assert "print(x * 2)" in saved and ">84" in saved and "Doubled: 84." in saved
    # The model got the request without the mention; the model name is the server's.
    first = model_server.requests[0]
    assert first["model"] == "scripted"
    asked = [m["content"] for m in first["messages"] if m["role"] == "user"]
    assert any("what is six times seven?" in str(c) for c in asked)
    assert not any("@codeagent" in str(c) for c in asked)
    status, sessions = request(base_url, token, "GET", "codeagent/api/sessions")
    assert status == 200
    (session,) = [s for s in sessions if s["prompt"] == "what is six times seven?"]
    assert session["status"] == "answered" and session["state"] == "idle"


async def test_the_chat_stop_button_stops_the_run(
    server: tuple[str, str, Path, Path], model_server: ScriptedModelServer
) -> None:
    base_url, token, _root, _log = server
    model_server.set_script(
        [tool_calls(("run_cell", {"code": "import time\ntime.sleep(120)"})), text("slept")]
    )
    path = new_chat(server, "stop")
    client = await connected(server, path)
    try:
        client.send("@codeagent sleep for two minutes")
        await client.until(lambda c: "time.sleep(120)" in bodies(c.from_persona()))
        # What the chat's stop button posts (jupyter_ai_persona_manager's CancelHandler).
        status, answer = request(
            base_url, token, "POST", f"api/ai/personas/cancel?chat_id={client.chat_id}"
        )
        assert status == 200 and answer["cancelled"] == [PERSONA_ID], answer
        await client.until(finished(1), timeout=60)
    finally:
        client.close()
    assert "stopped" in bodies(saved_messages(server, path))


async def test_an_approval_is_answered_in_the_chat(
    server: tuple[str, str, Path, Path], model_server: ScriptedModelServer
) -> None:
    _base_url, _token, root, _log = server
    model_server.set_script(
        [tool_calls(("write_file", {"path": "note.txt", "content": "hello"})), text("Written.")]
    )
    path = new_chat(server, "approve")
    client = await connected(server, path)
    try:
        client.send("@codeagent write a note")
        await client.until(lambda c: "Approval needed" in bodies(c.from_persona()))
        assert not (root / "note.txt").exists()
        client.send("@codeagent approve")
        await client.until(finished(1))
    finally:
        client.close()
    assert (root / "note.txt").read_text() == "hello"
    said = bodies(saved_messages(server, path))
    assert "<i>approved</i>" in said and "Written." in said


async def test_sandbox_and_model_content_stays_data_in_the_chat(
    server: tuple[str, str, Path, Path], model_server: ScriptedModelServer
) -> None:
    hostile = (
        "print('<img src=x onerror=alert(1)>')\n"
        "from IPython.display import HTML, display\n"
        "display(HTML('<script>alert(2)</script><img src=\"http://127.0.0.1:9/leak.png\">'))"
    )
    model_server.set_script(
        [
            tool_calls(("run_cell", {"code": hostile})),
            text('Done <img src="http://127.0.0.1:9/answer.png"> ![x](http://127.0.0.1:9/md.png)'),
        ]
    )
    path = new_chat(server, "hostile")
    client = await connected(server, path)
    try:
        client.send("@codeagent show something")
        await client.until(finished(1))
    finally:
        client.close()
    saved = bodies(saved_messages(server, path))
    outside_code = "".join(saved.split("```")[::2])  # the cell's own code may say anything
    assert "&lt;img src=x onerror=alert(1)&gt;" in outside_code  # printed text, escaped
    assert "<img src=x" not in outside_code
    assert "<script" not in outside_code and "alert(2)" not in outside_code
    # No image that would fetch a URL: the model's raw HTML is text, its Markdown image
    # and the sandbox's HTML image lose their remote source.
    assert not re.search(r"<img[^>]*src=[\"']?http", outside_code)
    assert '&lt;img src="http://127.0.0.1:9/answer.png"&gt;' in outside_code


async def test_a_mention_in_the_chat_adds_the_file_and_a_person_stays_text(
    server: tuple[str, str, Path, Path], model_server: ScriptedModelServer
) -> None:
    """``@sales.csv`` in a chat message reaches the model as the file's text; ``@alice``
    names nothing here (in a chat, a person): the message runs, the mention left as text."""
    _base_url, _token, root, _log = server
    (root / "sales.csv").write_text("month,revenue\n2024-04,17\n")
    model_server.set_script([text("Seen.")])
    before = len(model_server.requests)
    client = await connected(server, new_chat(server, "mentions"))
    try:
        client.send("@codeagent summarize @sales.csv for @alice")
        await client.until(finished(1))
    finally:
        client.close()
    asked = json.dumps(model_server.requests[before]["messages"])
    assert "2024-04,17" in asked  # the file, read beneath the server's root
    assert "for @alice" in asked and "unknown mention" not in bodies(client.from_persona())
