"""The chat adapter against the scripted server, through each of its transports: the real
``openai`` client, and the HTTP client ``openai`` uses (the CLI's first request): every
test runs on both, so both send the same requests and fail with the same errors."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from typing import Any

import pytest

from codeagent_jupyter.core.ports import Model, Usage
from codeagent_jupyter.errors import ModelError
from codeagent_jupyter.models.chat import ChatModel, current_session
from codeagent_jupyter.models.http_chat import HttpChatModel
from codeagent_jupyter.models.openai_chat import OpenAIChatModel
from tests.scripted_model import ScriptedModelServer, delay, error, text, tool_calls

USER = [{"role": "user", "content": "What is 6 * 7?"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run_cell",
            "description": "Run Python code.",
            "parameters": {"type": "object", "properties": {"code": {"type": "string"}}},
        },
    }
]


class Recorder:
    """Collects ``on_text`` deltas and ``on_retry`` reports."""

    def __init__(self) -> None:
        self.deltas: list[str] = []
        self.retries: list[tuple[int, float, str]] = []

    def on_text(self, delta: str) -> None:
        self.deltas.append(delta)

    def on_retry(self, attempt: int, wait_s: float, reason: str) -> None:
        self.retries.append((attempt, wait_s, reason))

    def kwargs(self) -> dict[str, Any]:
        return {"on_text": self.on_text, "on_retry": self.on_retry}


ADAPTERS = {"openai": OpenAIChatModel, "http": HttpChatModel}
Adapter: type[ChatModel] = OpenAIChatModel
"""The adapter the running test uses (set by ``adapter`` for each test)."""


@pytest.fixture(autouse=True, params=sorted(ADAPTERS))
def adapter(request: pytest.FixtureRequest) -> Any:
    """Every test in this module, once per transport."""
    global Adapter
    Adapter = ADAPTERS[request.param]
    yield Adapter
    Adapter = OpenAIChatModel


def make(srv: ScriptedModelServer, **kw: Any) -> ChatModel:
    kw.setdefault("api_key", "test-key")
    kw.setdefault("backoff", 0.01)
    return Adapter("scripted-model", srv.url, **kw)


@pytest.mark.parametrize("stream", [False, True])
async def test_text_answer(scripted_model: ScriptedModelServer, stream: bool) -> None:
    answer = "The answer is 42, as 6 * 7 = 42."
    scripted_model.set_script([text(answer, usage={"prompt_tokens": 17, "completion_tokens": 9})])
    model, rec = make(scripted_model, stream=stream), Recorder()
    reply = await model.complete(USER, TOOLS, **rec.kwargs())
    await model.aclose()

    assert isinstance(model, Model)
    assert reply.message == {"role": "assistant", "content": answer}
    assert reply.usage == Usage(prompt_tokens=17, completion_tokens=9, estimated=False)
    assert "".join(rec.deltas) == answer
    assert len(rec.deltas) > 1 if stream else rec.deltas == [answer]
    body = scripted_model.requests[0]
    assert body["model"] == "scripted-model"
    assert body["messages"] == USER and body["tools"] == TOOLS
    assert body.get("stream", False) is stream
    assert ("stream_options" in body) is stream


@pytest.mark.parametrize("stream", [False, True])
async def test_parallel_tool_calls(scripted_model: ScriptedModelServer, stream: bool) -> None:
    turn = tool_calls(
        ("run_cell", {"code": "import math\nprint(math.pi * 2 ** 10)"}),
        ("update_plan", {"steps": [{"step": "compute", "status": "in_progress"}]}),
        ("run_cell", {"code": "x = 'quote \" and unicode é'"}),
        content="Running two cells.",
    )
    scripted_model.set_script([turn])
    model = make(scripted_model, stream=stream)
    reply = await model.complete(USER, TOOLS)
    await model.aclose()

    assert reply.message == turn["message"]  # ids, names and reassembled argument fragments
    ids = [c["id"] for c in reply.message["tool_calls"]]
    assert len(set(ids)) == 3
    args = json.loads(reply.message["tool_calls"][2]["function"]["arguments"])
    assert args == {"code": "x = 'quote \" and unicode é'"}


async def test_429_retry_after_is_honoured(scripted_model: ScriptedModelServer) -> None:
    scripted_model.set_script([error(429, retry_after=0.4), text("ok")])
    model, rec = make(scripted_model, backoff=30), Recorder()  # backoff alone would wait 30 s
    started = time.monotonic()
    reply = await model.complete(USER, TOOLS, **rec.kwargs())
    elapsed = time.monotonic() - started
    await model.aclose()

    assert reply.message["content"] == "ok"
    assert len(rec.retries) == 1
    attempt, wait_s, reason = rec.retries[0]
    assert attempt == 1 and wait_s == pytest.approx(0.4)
    assert "HTTP 429" in reason and "scripted 429" in reason
    assert 0.35 <= elapsed < 5
    assert len(scripted_model.requests) == 2


async def test_persistent_500_gives_one_line_error(scripted_model: ScriptedModelServer) -> None:
    scripted_model.set_script([error(500, message="upstream exploded\non two lines")] * 3)
    model, rec = make(scripted_model, max_retries=2), Recorder()
    with pytest.raises(ModelError) as info:
        await model.complete(USER, TOOLS, **rec.kwargs())
    await model.aclose()

    message = str(info.value)
    assert message.startswith("model request failed after 3 attempts: HTTP 500 from http://")
    assert "upstream exploded on two lines" in message and "\n" not in message
    assert info.value.status_code == 500
    assert [r[0] for r in rec.retries] == [1, 2]
    assert all(0 < r[1] < 1 for r in rec.retries)  # tiny backoff, exponential
    assert scripted_model.remaining == 0


@pytest.mark.parametrize("stream", [False, True])
async def test_timeout_retried_then_answered(
    scripted_model: ScriptedModelServer, stream: bool
) -> None:
    scripted_model.set_script([delay(3, text("too late")), text("in time")])
    model, rec = make(scripted_model, timeout=0.3, stream=stream), Recorder()
    started = time.monotonic()
    reply = await model.complete(USER, TOOLS, **rec.kwargs())
    await model.aclose()

    assert reply.message["content"] == "in time"
    assert len(rec.retries) == 1 and "within 0.3s" in rec.retries[0][2]
    assert time.monotonic() - started < 2.5


async def test_timeouts_exhaust_retries(scripted_model: ScriptedModelServer) -> None:
    scripted_model.set_script([delay(3, text("late"))] * 2)
    model, rec = make(scripted_model, timeout=0.2, max_retries=1), Recorder()
    with pytest.raises(
        ModelError, match=r"failed after 2 attempts: no answer from .* within 0\.2s"
    ):
        await model.complete(USER, TOOLS, **rec.kwargs())
    await model.aclose()
    assert len(rec.retries) == 1


async def test_unanswered_tool_call_fails_at_once(scripted_model: ScriptedModelServer) -> None:
    scripted_model.set_script([text("never served")])
    call = tool_calls(("run_cell", {"code": "1"}))["message"]
    messages = [*USER, call, {"role": "user", "content": "and now?"}]
    model, rec = make(scripted_model), Recorder()
    with pytest.raises(ModelError) as info:
        await model.complete(messages, TOOLS, **rec.kwargs())
    await model.aclose()

    assert str(info.value).startswith("model request rejected: HTTP 400")
    assert call["tool_calls"][0]["id"] in str(info.value)
    assert info.value.status_code == 400
    assert rec.retries == [] and len(scripted_model.requests) == 1


async def test_bad_key_is_clear_and_never_shown() -> None:
    with ScriptedModelServer([text("hi")], api_key="right-key") as srv:
        model = Adapter("m", srv.url, api_key="wrong-key-123")
        with pytest.raises(ModelError) as info:
            await model.complete(USER, [])
        await model.aclose()
        assert srv.headers[0]["authorization"] == "Bearer wrong-key-123"
    assert "HTTP 401" in str(info.value) and "OPENAI_API_KEY" in str(info.value)
    assert "wrong-key-123" not in str(info.value) + repr(model)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
async def test_refused_connection_on_this_machine_fails_at_once(host: str) -> None:
    """Nothing listens on that port: no retry can change that, so no 4 retries (18 s)."""
    with ScriptedModelServer([]) as srv:
        port = srv.url.split(":")[2].split("/")[0]  # a port that is free again once it stops
    model, rec = Adapter("m", f"http://{host}:{port}/v1", backoff=5.0), Recorder()
    with pytest.raises(ModelError) as info:
        await model.complete(USER, [], **rec.kwargs())
    await model.aclose()
    assert rec.retries == []
    message = str(info.value)
    assert "connection refused" in message and f"{host}:{port}" in message
    assert "model server running" in message and "\n" not in message


async def test_connection_dropped_by_a_server_is_retried() -> None:
    """A server that is there but drops the connection may answer the next time: retried."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        stop = threading.Event()

        def drop_every_connection() -> None:
            listener.settimeout(0.2)
            while not stop.is_set():
                try:
                    conn, _ = listener.accept()
                except (TimeoutError, OSError):
                    continue
                conn.close()

        dropper = threading.Thread(target=drop_every_connection, daemon=True)
        dropper.start()
        model, rec = Adapter("m", url, max_retries=1, backoff=0.01), Recorder()
        try:
            with pytest.raises(ModelError, match=r"failed after 2 attempts: connection to http"):
                await model.complete(USER, [], **rec.kwargs())
        finally:
            await model.aclose()
            stop.set()
            dropper.join(5)
    assert len(rec.retries) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_usage_estimated_when_absent(stream: bool) -> None:
    with ScriptedModelServer([tool_calls(("run_cell", {"code": "1+1"}))], send_usage=False) as srv:
        model = make(srv, stream=stream)
        reply = await model.complete(USER, TOOLS)
        await model.aclose()
    assert reply.usage.estimated is True
    request_chars = len(json.dumps([USER, TOOLS]))
    assert reply.usage.prompt_tokens == pytest.approx(request_chars / 4, abs=2)
    assert 5 < reply.usage.completion_tokens < 100


async def test_stream_options_rejected_falls_back() -> None:
    with ScriptedModelServer([text("a"), text("b")], reject_stream_options=True) as srv:
        model = make(srv, stream=True)
        first = await model.complete(USER, TOOLS)
        second = await model.complete(USER, TOOLS)
        await model.aclose()
        sent = ["stream_options" in body for body in srv.requests]
    assert (first.message["content"], second.message["content"]) == ("a", "b")
    assert sent == [True, False, False]  # rejected once, then never sent again
    assert first.usage.estimated and second.usage.estimated


async def test_extra_body_is_sent(scripted_model: ScriptedModelServer) -> None:
    scripted_model.set_script([text("ok")])
    model = make(scripted_model, extra_body={"temperature": 0, "top_k": 5})
    await model.complete(USER, [])
    await model.aclose()
    body = scripted_model.requests[0]
    assert body["temperature"] == 0 and body["top_k"] == 5
    assert "tools" not in body  # no empty tools list: some servers reject it


def test_one_model_serves_several_event_loops(scripted_model: ScriptedModelServer) -> None:
    """The CLI and tests may call ``asyncio.run`` more than once with the same model."""
    scripted_model.set_script([text("one"), text("two")])
    model = make(scripted_model)

    async def ask() -> str:
        try:
            return (await model.complete(USER, [])).message["content"]
        finally:
            await model.aclose()

    assert [asyncio.run(ask()) for _ in range(2)] == ["one", "two"]


@pytest.mark.parametrize("stream", [False, True])
def test_both_transports_send_the_same_request(
    scripted_model: ScriptedModelServer, stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same body and the same headers (but for the connection's own) from both, the
    organisation and project that ``openai`` reads from the environment included."""
    monkeypatch.setenv("OPENAI_ORG_ID", "org-1")
    monkeypatch.setenv("OPENAI_PROJECT_ID", "proj-1")
    scripted_model.set_script([text("one"), text("two")])
    for cls in (OpenAIChatModel, HttpChatModel):
        model = cls(
            "m", scripted_model.url, "k", stream=stream, extra_body={"top_k": 3}, send_session=True
        )

        async def ask(model: ChatModel = model) -> None:
            token = current_session.set("s1")
            try:
                await model.complete(USER, TOOLS)
            finally:
                current_session.reset(token)
                await model.aclose()

        asyncio.run(ask())
    own = {"host", "content-length", "accept-encoding", "connection"}
    openai_sent, http_sent = (
        {k: v for k, v in h.items() if k not in own} for h in scripted_model.headers
    )
    assert http_sent == openai_sent and openai_sent["openai-project"] == "proj-1"
    assert openai_sent["x-codeagent-session"] == "s1"
    assert scripted_model.requests[0] == scripted_model.requests[1]
