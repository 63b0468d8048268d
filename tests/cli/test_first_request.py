"""``codeagent run``'s first model request leaves before the sandbox is up, without
``openai``: a real CLI process, a real sandbox, the scripted model (which notes when each
request arrives), and the session notebook (whose ``run_started`` event is written when the
kernel is ready)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from codeagent_jupyter.errors import ModelError
from codeagent_jupyter.models.openai_chat import OpenAIChatModel
from tests.cli.in_process import codeagent_here
from tests.cli.test_cli import codeagent
from tests.scripted_model import ScriptedModelServer, error, text, tool_calls

CELL = "print(6 * 7)"


class Arrivals:
    """A scripted model that notes when each request arrives: one cell, then an answer."""

    def __init__(self, *first: dict[str, Any]) -> None:
        self.first = list(first)
        self.times: list[float] = []
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        with self._lock:
            self.times.append(time.time())
            if self.first:
                return self.first.pop(0)
        if not any(m["role"] == "assistant" for m in messages):
            return tool_calls(("run_cell", {"code": CELL}))
        return text("It is 42.", usage={"prompt_tokens": 11, "completion_tokens": 5})


def run(srv: ScriptedModelServer, ws: Path, *flags: str, env: dict | None = None) -> Any:
    out = ws / f"s{len(list(ws.glob('s*.ipynb')))}.ipynb"
    argv = ["run", "what is 6*7", "--model", "m", "--base-url", srv.url, "--workdir", str(ws)]
    result = codeagent(*argv, "--out", str(out), *flags, env=env, timeout=300)
    meta = json.loads(out.read_text())["metadata"]["codeagent"] if out.exists() else {}
    return result, meta


def ready_at(meta: dict[str, Any]) -> float:
    """When the sandbox was ready: the run begins (``run_started``) only then."""
    return next(e["time"] for e in meta["events"] if e["type"] == "run_started")


@pytest.mark.parametrize("stream", [False, True])
def test_first_request_leaves_before_the_sandbox_is_ready(tmp_path: Path, stream: bool) -> None:
    """The request is at the server while the kernel still starts; the session is the
    same streamed or not (the transcript and the usage that the notebook records)."""
    model = Arrivals()
    with ScriptedModelServer(model) as srv:
        result, meta = run(srv, tmp_path, *(["--stream"] if stream else []))
        body = srv.requests[0]
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "It is 42."
    assert model.times[0] < ready_at(meta) < model.times[1]
    assert body.get("stream", False) is stream and body["tools"]
    call, answer = meta["transcript"][0]
    code = json.dumps({"code": CELL})
    assert call["tool_calls"][0]["function"] == {"name": "run_cell", "arguments": code}
    assert answer == {"role": "assistant", "content": "It is 42."}
    assert meta["usage"]["requests"] == 2 and meta["usage"]["completion_tokens"] > 5


def test_first_request_is_retried_on_429_and_500(tmp_path: Path) -> None:
    model = Arrivals(error(429, retry_after=0.1), error(500, retry_after=0.1))
    with ScriptedModelServer(model) as srv:
        result, meta = run(srv, tmp_path)
        url = srv.url
    assert result.returncode == 0, result.stderr
    assert len(model.times) == 4  # 429, 500, the cell, the answer
    retries = [e for e in meta["events"] if e["type"] == "model_retry"]
    assert [r["reason"] for r in retries] == [
        f"HTTP 429 from {url}: scripted 429",
        f"HTTP 500 from {url}: scripted 500",
    ]
    assert "retry" in result.stderr.lower()


async def test_a_bad_key_reads_as_it_does_through_openai(tmp_path: Path) -> None:
    """The line the user reads is the one the ``openai`` path gives, and the key is not in
    it."""
    with ScriptedModelServer([], api_key="right-key") as srv:
        result, _ = run(srv, tmp_path, env={"OPENAI_API_KEY": "wrong-key-123"})
        through_openai = OpenAIChatModel("m", srv.url, api_key="wrong-key-123")
        with pytest.raises(ModelError) as info:
            await through_openai.complete([{"role": "user", "content": "x"}], [])
        await through_openai.aclose()
        sent = srv.headers[0]["authorization"]
    assert result.returncode == 1
    assert sent == "Bearer wrong-key-123"
    assert f"codeagent: stopped: {info.value}" in result.stderr.splitlines()
    assert "(check OPENAI_API_KEY)" in str(info.value)
    assert "wrong-key-123" not in result.stderr + result.stdout


def test_flags_no_sandbox_takes_fail_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sandbox is made once the first request is under way: a bad combination of its
    flags is still refused first, with nothing sent to the model."""
    with ScriptedModelServer([text("never")]) as srv:
        argv = ["run", "x", "--model", "m", "--base-url", srv.url, "--workdir", str(tmp_path)]
        flags = ["--network", "policy", "--gateway-url", "http://127.0.0.1:9"]
        result = codeagent_here(capsys, monkeypatch, *argv, *flags)
        assert srv.requests == []
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "codeagent: error: --network policy needs a local sandbox (not --gateway-url)"
    )
