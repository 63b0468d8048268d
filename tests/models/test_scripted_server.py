"""The scripted model server itself: it must be as strict as the real API, or tests lie."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.scripted_model import ScriptedModelServer, error, text, tool_calls

ROOT = Path(__file__).resolve().parents[2]


def post(url: str, body: Any, timeout: float = 10) -> tuple[int, dict[str, str], str]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(
        f"{url}/chat/completions", data, {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def chat(messages: Any, **extra: Any) -> dict[str, Any]:
    return {"model": "m", "messages": messages, **extra}


CALL = tool_calls(("run_cell", {"code": "1"}), ("read_file", {"path": "a"}))["message"]
ID0, ID1 = (c["id"] for c in CALL["tool_calls"])
USER = {"role": "user", "content": "go"}
LATER = tool_calls(("run_cell", {"code": "2"}))["message"]
LATER_ID = LATER["tool_calls"][0]["id"]


def answer(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": "done"}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (chat([USER, CALL, answer(ID0), USER]), f"did not have response messages: {ID1}"),
        (chat([USER, CALL]), ID0),
        (chat([USER, CALL, answer(ID1), USER, LATER, answer(LATER_ID), USER]), ID0),
        (chat([USER, answer("call_nope")]), "unknown tool_call_id 'call_nope'"),
        (chat([USER, CALL, answer(ID0), answer(ID1), USER, answer(ID0)]), "unknown tool_call_id"),
        (chat({"role": "user"}), "'messages'"),
        (chat([]), "'messages'"),
        (chat([{"role": "robot", "content": "x"}]), "messages[0].role"),
        ({"messages": [USER]}, "model"),
        (chat([USER], tools=[{"type": "function"}]), "'tools'"),
        (b"{not json", "parse the JSON"),
    ],
)
def test_rejects_what_the_real_api_rejects(
    scripted_model: ScriptedModelServer, body: Any, expected: str
) -> None:
    scripted_model.set_script([text("unused")])
    status, _, payload = post(scripted_model.url, body)
    assert status == 400
    assert expected in json.loads(payload)["error"]["message"]
    assert scripted_model.remaining == 1  # a rejected request consumes no turn
    assert len(scripted_model.requests) == 1


def test_accepts_a_fully_answered_conversation(scripted_model: ScriptedModelServer) -> None:
    scripted_model.set_script([text("fine")])
    body = chat([USER, CALL, answer(ID1), answer(ID0), USER])
    status, _, payload = post(scripted_model.url, body)
    assert status == 200
    reply = json.loads(payload)
    assert reply["choices"][0]["message"] == {"role": "assistant", "content": "fine"}
    assert reply["usage"]["total_tokens"] > 0
    assert scripted_model.requests == [body]


def test_errors_and_exhaustion(scripted_model: ScriptedModelServer) -> None:
    scripted_model.set_script([error(429, retry_after=0.5, message="slow down")])
    status, headers, payload = post(scripted_model.url, chat([USER]))
    assert (status, headers["retry-after"]) == (429, "0.5")
    assert json.loads(payload)["error"] == {
        "message": "slow down",
        "type": "rate_limit_error",
        "param": None,
        "code": None,
    }
    status, _, payload = post(scripted_model.url, chat([USER]))
    assert status == 500
    assert "script exhausted after 1 turns" in json.loads(payload)["error"]["message"]


def sse_events(raw: str) -> list[Any]:
    lines = [line[len("data: ") :] for line in raw.split("\n\n") if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


@pytest.mark.parametrize("include_usage", [True, False])
def test_stream_wire_format(scripted_model: ScriptedModelServer, include_usage: bool) -> None:
    turn = tool_calls(("run_cell", {"code": "print('hello world')"}), content="Let me run it.")
    scripted_model.set_script([turn])
    options = {"stream_options": {"include_usage": True}} if include_usage else {}
    status, headers, raw = post(scripted_model.url, chat([USER], stream=True, **options))
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    events = sse_events(raw)
    deltas = [e["choices"][0]["delta"] for e in events if e["choices"]]
    texts = [d["content"] for d in deltas if d.get("content")]
    fragments = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert len(texts) > 1 and "".join(texts) == "Let me run it."
    assert fragments[0]["id"] == turn["message"]["tool_calls"][0]["id"]
    assert fragments[0]["function"]["name"] == "run_cell"
    assert all("id" not in f and f["index"] == 0 for f in fragments[1:]) and len(fragments) > 2
    arguments = "".join(f["function"]["arguments"] for f in fragments)
    assert json.loads(arguments) == {"code": "print('hello world')"}
    finishes = [e["choices"][0]["finish_reason"] for e in events if e["choices"]]
    assert finishes[-1] == "tool_calls" and set(finishes[:-1]) == {None}
    usage_events = [e for e in events if not e["choices"]]
    assert len(usage_events) == int(include_usage)
    if include_usage:
        assert usage_events[0]["usage"]["prompt_tokens"] > 0


def test_callable_script_serves_concurrent_sessions() -> None:
    def echo(messages: list[dict[str, Any]]) -> dict[str, Any]:
        return text(f"echo: {messages[-1]['content']}")

    results: dict[int, str] = {}

    def client(i: int) -> None:
        _, _, payload = post(srv.url, chat([{"role": "user", "content": f"session {i}"}]))
        results[i] = json.loads(payload)["choices"][0]["message"]["content"]

    with ScriptedModelServer(echo) as srv:
        threads = [threading.Thread(target=client, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert srv.remaining is None and len(srv.requests) == 16
    assert results == {i: f"echo: session {i}" for i in range(16)}


def test_models_endpoint(scripted_model: ScriptedModelServer) -> None:
    with urllib.request.urlopen(f"{scripted_model.url}/models", timeout=10) as response:
        listing = json.load(response)
    assert listing["data"][0]["id"] == "scripted"


def test_runs_as_a_program(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"tool_calls": [["run_cell", {"code": "2+2"}]]}, {"text": "4"}]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.scripted_model", "--script", str(script)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        first = json.loads(post(url, chat([USER]))[2])["choices"][0]["message"]
        call_id = first["tool_calls"][0]["id"]
        second = post(url, chat([USER, first, answer(call_id)]))
        assert json.loads(second[2])["choices"][0]["message"]["content"] == "4"
    finally:
        proc.terminate()
        code = proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
    assert code == 0
