"""Helpers' budgets are carved from the parent's: steps and tokens left, shared with the
parent (``left // (helpers + 1)``), and the tokens helpers use count against the parent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.cli.test_cli import codeagent
from tests.scripted_model import text, tool_calls
from tests.server.helpers import Api

TASKS = ["count A", "count B"]
USAGE = {"prompt_tokens": 100, "completion_tokens": 50}


def tireless(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The parent delegates, then answers; helpers run cells until their budget stops them."""
    first = next(m["content"] for m in messages if m["role"] == "user")
    if any(first.endswith(t) for t in TASKS):
        return tool_calls(("run_cell", {"code": "x = 1"}), usage=USAGE)
    if any(m["role"] == "assistant" for m in messages):
        return text("done", usage=USAGE)
    return tool_calls(("delegate", {"tasks": TASKS}), usage=USAGE)


def helpers_of(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``delegate`` tool result the parent's last request carried."""
    parent = [
        r for r in requests if not any(r["messages"][1]["content"].endswith(t) for t in TASKS)
    ]
    result = parent[-1]["messages"][-1]["content"]  # the JSON, then the budget line
    return json.JSONDecoder().raw_decode(result)[0]["helpers"]


def test_helpers_share_the_steps_the_parent_has_left(scripted_model: Any, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    out = tmp_path / "s.ipynb"
    scripted_model.set_script(tireless)
    args = ("run", "go", "--model", "m", "--base-url", scripted_model.url, "--workdir", str(ws))
    result = codeagent(*args, "--out", str(out), "--max-steps", "4", "--delegate", "2", timeout=240)
    assert result.returncode == 0, result.stderr
    helpers = helpers_of(scripted_model.requests)
    # 4 steps, 1 used by the delegate call: 3 left, shared by 2 helpers and the parent.
    assert [h["budget"]["max_steps"] for h in helpers] == [1, 1]
    assert [(h["status"], h["steps"]) for h in helpers] == [("max_steps", 1)] * 2
    assert len(scripted_model.requests) == 2 + 2  # parent: delegate + answer; helpers: 1 each
    # The helpers' tokens count against the parent: 4 requests of 150 tokens in all.
    usage = nbformat.read(out, as_version=4).metadata.codeagent.usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (400, 200)
    assert "600 tokens" in result.stderr.splitlines()[-1]


@pytest.mark.codeagent(delegate_max_per_call=2, max_tokens=1000)
async def test_helpers_token_budget_is_carved_and_charged(api: Api, scripted_model: Any) -> None:
    scripted_model.set_script(tireless)
    sid = (await api.start("go"))["id"]
    events = await api.run_to_end(sid)
    helpers = helpers_of(scripted_model.requests)
    # 1000 tokens, 150 used by the parent's first request: 850 left, 283 per share.
    assert [h["budget"]["max_tokens"] for h in helpers] == [283, 283]
    assert [h["status"] for h in helpers] == ["max_tokens"] * 2
    assert all("token budget of 283 tokens" in h["answer"] for h in helpers)
    assert [h["usage"]["total_tokens"] for h in helpers] == [300, 300]  # two requests each
    finished = events[-1]
    assert finished["type"] == "run_finished" and finished["status"] == "answered"
    assert finished["usage"]["total_tokens"] == 150 + 600 + 150  # the helpers' 600 included
    charged = [e for e in events if e["type"] == "usage" and e["prompt_tokens"] == 200]
    assert len(charged) == 2  # one charge per helper, on the parent's stream
