"""``EarlyChatModel``: the HTTP transport until ``openai`` is loaded, ``openai`` after, and
the same replies from both (the CLI's model)."""

from __future__ import annotations

import asyncio
import time

from codeagent_jupyter.models.early import EarlyChatModel
from codeagent_jupyter.models.http_chat import HttpTransport
from codeagent_jupyter.models.openai_chat import OpenAITransport
from tests.models.test_openai_chat import TOOLS, USER
from tests.scripted_model import ScriptedModelServer, text, tool_calls


async def test_requests_move_to_openai_once_it_is_loaded(
    scripted_model: ScriptedModelServer,
) -> None:
    turn = tool_calls(("run_cell", {"code": "6*7"}))
    scripted_model.set_script([turn, turn, text("42"), text("42")])
    model = EarlyChatModel("m", scripted_model.url, "k", stream=True, backoff=0.01)
    before = [await model.complete(USER, TOOLS) for _ in range(1)]
    assert isinstance(await model.transport.current(), HttpTransport)
    model.load_openai()
    deadline = time.monotonic() + 120
    while model.transport.openai is None and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert isinstance(await model.transport.current(), OpenAITransport)
    after = [await model.complete(USER, TOOLS)]
    texts = [await model.complete(USER, [])]
    model.load_openai()  # once only: a second call starts nothing
    await model.aclose()
    first, second = before[0], after[0]
    assert first.message["tool_calls"][0]["function"] == second.message["tool_calls"][0]["function"]
    assert first.usage == second.usage and first.finish_reason == second.finish_reason
    assert texts[0].message == {"role": "assistant", "content": "42"}
    assert scripted_model.headers[0]["user-agent"] == scripted_model.headers[1]["user-agent"]
