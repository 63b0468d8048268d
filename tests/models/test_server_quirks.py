"""The adapter against servers that behave like llama.cpp, vLLM and Ollama really do.

Each test first shows, where it can, that the scripted server's quirk bites a naive request
(so the test could fail), then that the adapter's request gets through.
"""

from __future__ import annotations

from typing import Any

import openai
import pytest

from codeagent_jupyter.core.usage import empty_reply_error, is_empty
from codeagent_jupyter.errors import ModelError
from codeagent_jupyter.models.chat import DEFAULT_MAX_OUTPUT_TOKENS, ChatModel
from tests.models import test_openai_chat as adapters
from tests.models.test_openai_chat import TOOLS, USER, Recorder, adapter  # noqa: F401 (each test on both transports)
from tests.scripted_model import ScriptedModelServer, text, tool_calls


def make(srv: ScriptedModelServer, **kw: Any) -> ChatModel:
    kw.setdefault("backoff", 0.01)
    return adapters.Adapter("local", srv.url, **kw)


def history_after_a_call() -> list[dict[str, Any]]:
    """The conversation after one tool call, with the assistant turn as a server sends it."""
    call = tool_calls(("run_cell", {"code": "1+1"}))["message"]  # content: None
    answer = {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"], "content": "2"}
    return [*USER, call, answer]


async def test_tool_choice_auto_is_sent() -> None:
    turn = tool_calls(("run_cell", {"code": "6*7"}))
    with ScriptedModelServer([turn, turn], quirks=["no-tool-choice-means-none"]) as srv:
        silent = make(srv, tool_choice=None)
        naive = await silent.complete(USER, TOOLS)
        await silent.aclose()
        model = make(srv)
        reply = await model.complete(USER, TOOLS)
        await model.aclose()
        bodies = srv.requests
    assert "tool_calls" not in naive.message  # without tool_choice the tools were ignored
    assert "tool_choice" not in bodies[0]
    assert bodies[1]["tool_choice"] == "auto"
    assert reply.message["tool_calls"][0]["function"]["name"] == "run_cell"


async def test_no_tool_choice_without_tools(scripted_model: ScriptedModelServer) -> None:
    scripted_model.set_script([text("hi")])
    model = make(scripted_model)
    await model.complete(USER, [])
    await model.aclose()
    assert "tool_choice" not in scripted_model.requests[0]  # some servers refuse it alone


@pytest.mark.parametrize("stream", [False, True])
async def test_null_content_never_sent(stream: bool) -> None:
    history = history_after_a_call()
    with ScriptedModelServer([text("4")], quirks=["null-content-500"]) as srv:
        raw = openai.OpenAI(api_key="x", base_url=srv.url, max_retries=0)
        with pytest.raises(openai.InternalServerError, match="validation errors"):
            raw.chat.completions.create(model="local", messages=history)  # type: ignore[arg-type]
        model = make(srv, stream=stream)
        reply = await model.complete(history, TOOLS)
        await model.aclose()
        sent = srv.requests[-1]["messages"][1]
    assert reply.message["content"] == "4"
    assert sent["content"] == "" and sent["tool_calls"]
    assert history[1]["content"] is None  # the caller's history is not changed in place


async def test_tool_call_reply_has_empty_string_content(
    scripted_model: ScriptedModelServer,
) -> None:
    scripted_model.set_script([tool_calls(("run_cell", {"code": "1"}))])
    model = make(scripted_model)
    reply = await model.complete(USER, TOOLS)
    await model.aclose()
    assert reply.message["content"] == ""


async def test_validation_report_names_the_field_and_is_not_retried() -> None:
    bad = history_after_a_call()
    with ScriptedModelServer([text("never")], quirks=["null-content-500"]) as srv:
        # extra_body replaces the messages the adapter would send: the server's real report
        model, rec = make(srv, extra_body={"messages": bad}), Recorder()
        with pytest.raises(ModelError) as info:
            await model.complete(USER, TOOLS, **rec.kwargs())
        await model.aclose()
        requests = len(srv.requests)
    message = str(info.value)
    assert message.startswith("model request rejected: HTTP 500")
    assert "7 validation errors for CreateChatCompletionRequest" in message
    assert (
        "messages.1.ChatCompletionRequestAssistantMessage.content: "
        "Input should be a valid string" in message
    )
    assert "literal_error" not in message and "\n" not in message
    assert requests == 1 and rec.retries == []


async def test_streamed_tools_refused_after_headers_fall_back_once() -> None:
    script = [tool_calls(("run_cell", {"code": "6*7"})), text("42"), text("again")]
    with ScriptedModelServer(script, quirks=["no-streamed-tools"]) as srv:
        model, rec = make(srv, stream=True, max_retries=0), Recorder()  # no retry hides it
        first = await model.complete(USER, TOOLS, **rec.kwargs())
        second = await model.complete(USER, TOOLS, **rec.kwargs())
        plain = await model.complete(USER, [], **rec.kwargs())  # no tools: still streamed
        await model.aclose()
        streamed = [bool(b.get("stream")) for b in srv.requests]
    assert first.message["tool_calls"][0]["function"]["arguments"] == '{"code": "6*7"}'
    assert second.message["content"] == "42" and plain.message["content"] == "again"
    assert streamed == [True, False, False, True]
    assert len(rec.retries) == 1  # said once, for the session of this model object
    attempt, wait, reason = rec.retries[0]
    assert (attempt, wait) == (0, 0.0)
    assert "cannot stream replies to requests with tools" in reason
    assert "ended without any reply" in reason
    assert not model.stream_tools
    assert "".join(rec.deltas) == "42again"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("tools", [TOOLS, []])
async def test_empty_reply_is_an_error(stream: bool, tools: list[dict[str, Any]]) -> None:
    """The adapter hands an empty reply over as it came (with its finish reason), never
    retried; the loop's one check says what it is, for this model as for every other."""
    with ScriptedModelServer([text(""), text("")]) as srv:
        model, rec = make(srv, stream=stream), Recorder()
        reply = await model.complete(USER, tools, **rec.kwargs())
        await model.aclose()
        sent, url = len(srv.requests), srv.url
    assert is_empty(reply.message) and reply.finish_reason == "stop"
    error = empty_reply_error(model, reply)
    assert isinstance(error, ModelError)
    assert str(error) == (
        f"model local at {url} sent an empty reply: no text and no tool call (finish_reason 'stop')"
    )
    assert sent == 1 and not [r for r in rec.retries if r[0] > 0]  # not retried


async def test_max_tokens_sent_and_configurable(scripted_model: ScriptedModelServer) -> None:
    scripted_model.set_script([text("a"), text("b"), text("c")])
    for kw in ({}, {"max_output_tokens": 256}, {"max_output_tokens": None}):
        model = make(scripted_model, **kw)
        await model.complete(USER, TOOLS)
        await model.aclose()
    sent = [b.get("max_tokens") for b in scripted_model.requests]
    assert sent == [DEFAULT_MAX_OUTPUT_TOKENS, 256, None]


async def test_max_completion_tokens_when_max_tokens_is_refused() -> None:
    with ScriptedModelServer([text("a"), text("b")], quirks=["max-completion-tokens-only"]) as srv:
        model, rec = make(srv, max_output_tokens=300), Recorder()
        await model.complete(USER, TOOLS, **rec.kwargs())
        await model.aclose()
        await model.complete(USER, TOOLS, **rec.kwargs())
        await model.aclose()
        keys = [("max_tokens" in b, b.get("max_completion_tokens")) for b in srv.requests]
    assert keys == [(True, None), (False, 300), (False, 300)]
    assert rec.retries == []


@pytest.mark.parametrize(
    ("quirk", "status", "says", "fix"),
    [
        ("auto-tool-choice-off", 400, "requires --enable-auto-tool-choice", "start vLLM with"),
        ("tools-need-jinja", 500, "tools param requires --jinja flag", "llama-server with --jinja"),
    ],
)
async def test_server_without_tool_support_fails_at_once(
    quirk: str, status: int, says: str, fix: str
) -> None:
    with ScriptedModelServer([text("never")], quirks=[quirk]) as srv:
        model, rec = make(srv), Recorder()
        with pytest.raises(ModelError) as info:
            await model.complete(USER, TOOLS, **rec.kwargs())
        await model.aclose()
        requests = len(srv.requests)
    assert str(info.value).startswith(f"model request rejected: HTTP {status}")
    assert says in str(info.value) and fix in str(info.value)
    assert requests == 1 and rec.retries == []


async def test_stream_without_usage_is_marked_estimated() -> None:
    with ScriptedModelServer([text("hello there")], quirks=["no-stream-usage"]) as srv:
        model = make(srv, stream=True)
        reply = await model.complete(USER, TOOLS)
        await model.aclose()
        asked = srv.requests[0].get("stream_options")
    assert asked == {"include_usage": True}  # asked for, where the server supports it
    assert reply.usage.estimated and reply.usage.prompt_tokens > 0


def test_unknown_quirk_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown quirk"):
        ScriptedModelServer([], quirks=["no-such-thing"])
