"""``codeagent run`` against servers with real servers' quirks: a real process, a real
sandbox, the scripted model over HTTP. What a user sees must be honest: tool calls reach the
sandbox, a fallback is said once, an empty answer is a failure, a guess is marked as one."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import nbformat

from codeagent_jupyter.record.eventlog import decode_notebook
from codeagent_jupyter.timeline.fold import fold
from codeagent_jupyter.widget import render
from tests.cli.test_cli import codeagent
from tests.scripted_model import ScriptedModelServer, text, tool_calls

QUIRKS = ["no-tool-choice-means-none", "null-content-500", "no-streamed-tools", "no-stream-usage"]


def run(srv: ScriptedModelServer, tmp_path: Path, *extra: str):
    out = tmp_path / "s.ipynb"
    result = codeagent(
        "run",
        "compute 6*7 with python",
        "--model",
        "local",
        "--base-url",
        srv.url,
        "--workdir",
        str(tmp_path),
        "--out",
        str(out),
        *extra,
    )
    return result, out


def test_streamed_run_through_a_llama_cpp_like_server(tmp_path: Path) -> None:
    script = [
        tool_calls(("run_cell", {"code": "print(6 * 7)"})),
        tool_calls(("write_file", "{not json")),  # refused: the cell shows what was sent
        text("It is 42."),
    ]
    with ScriptedModelServer(script, quirks=QUIRKS) as srv:
        result, out = run(srv, tmp_path, "--stream", "--max-output-tokens", "512")
        bodies = srv.requests
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "It is 42."
    # the tool call reached the sandbox, and its result went back to the model
    assert "-- step 1: run_cell" in result.stderr and "42" in result.stderr
    tool_messages = [m for m in bodies[-1]["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"].splitlines()[0] == "42"  # then its duration, the budget
    assert all(b["tool_choice"] == "auto" and b["max_tokens"] == 512 for b in bodies)
    # the fallback from streaming is said once; after it the server counts tokens itself
    assert result.stderr.count("cannot stream replies to requests with tools") == 1
    assert [bool(b.get("stream")) for b in bodies] == [True, False, False, False]
    assert "estimated" not in result.stderr
    nb = nbformat.read(out, as_version=4)
    refused = [c for c in nb.cells if c.metadata["codeagent"].get("status") == "refused"]
    assert len(refused) == 1 and "`{not json`" in refused[0].source


def test_empty_answer_is_a_failure_not_answered(tmp_path: Path) -> None:
    script = [tool_calls(("run_cell", {"code": "x = 1"})), text("")]
    with ScriptedModelServer(script, quirks=QUIRKS) as srv:
        result, out = run(srv, tmp_path)
    assert result.returncode == 1
    assert "== model_error:" in result.stderr
    assert "sent an empty reply: no text and no tool call" in result.stderr
    assert "codeagent: stopped:" in result.stderr
    meta = nbformat.read(out, as_version=4).metadata["codeagent"]
    assert meta["status"] == "model_error" and "empty reply" in meta["reason"]


def test_guessed_usage_is_marked_everywhere(tmp_path: Path) -> None:
    script = [tool_calls(("run_cell", {"code": "print(6 * 7)"})), text("It is 42.")]
    with ScriptedModelServer(script, quirks=["no-stream-usage"]) as srv:
        result, out = run(srv, tmp_path, "--stream")
        asked = [b.get("stream_options") for b in srv.requests]
    assert result.returncode == 0, result.stderr
    assert asked == [{"include_usage": True}] * 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("== answered:") and last.endswith(" tokens (estimated))")
    assert ", ~" in last
    meta = nbformat.read(out, as_version=4).metadata["codeagent"]
    assert meta["usage"]["estimated"] is True and meta["runs"][0]["usage"]["estimated"] is True
    usage_events = [e for e in meta["events"] if e["type"] == "usage"]
    assert usage_events and all(e["estimated"] and e["total_estimated"] for e in usage_events)
    # the panel, fed the same events (as the server streams them), says so too
    state = fold(decode_notebook(nbformat.read(out, as_version=4)))
    status = render.status_html(replace(state, price={"input": 1.0, "output": 2.0}), now=0.0)
    total = state.prompt_tokens + state.completion_tokens
    assert f"~{total:,} tokens (estimated: {state.prompt_tokens:,} in" in status
    assert 'data-estimated="true"' in status and "~$0.0" in status


def test_counted_usage_is_not_marked(tmp_path: Path) -> None:
    with ScriptedModelServer([text("Hi.")]) as srv:
        result, out = run(srv, tmp_path, "--stream")
    assert result.returncode == 0, result.stderr
    assert "estimated" not in result.stderr and " ~" not in result.stderr
    usage = nbformat.read(out, as_version=4).metadata["codeagent"]["usage"]
    assert "estimated" not in usage
    state = fold(decode_notebook(nbformat.read(out, as_version=4)))
    status = render.status_html(state, now=0.0)
    assert "~" not in status and "estimated" not in status and " tokens (" in status
    assert json.loads(json.dumps(usage))["prompt_tokens"] > 0


def test_bad_max_output_tokens_is_one_line(tmp_path: Path) -> None:
    result = codeagent("run", "x", "--model", "m", "--max-output-tokens", "0")
    assert result.returncode == 2
    assert "--max-output-tokens" in result.stderr and "Traceback" not in result.stderr
