"""``codeagent run --gateway-url``: the real CLI process with its kernel on a real gateway."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat

from tests.e2e.gateway.conftest import Gateway
from tests.scripted_model import text, tool_calls


def _codeagent(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codeagent_jupyter.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "OPENAI_API_KEY": "test-key", **env},
        timeout=120,
    )


def test_run_on_the_gateway(gateway: Gateway, workspace: Path, scripted_model: Any) -> None:
    code = "open('made.txt', 'w').write('by the kernel')"
    scripted_model.set_script([tool_calls(("run_cell", {"code": code})), text("Done.")])
    result = _codeagent(
        "run",
        "make a file",
        "--model",
        "m",
        "--base-url",
        scripted_model.url,
        "--workdir",
        str(workspace),
        "--memory-mb",
        "300",
        "--gateway-url",
        gateway.url,
        env={"CODEAGENT_GATEWAY_TOKEN": gateway.token},
    )
    assert result.returncode == 0, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("sandbox: bwrap") and "memory 300 MiB" in first
    assert (workspace / "made.txt").read_text() == "by the kernel"  # one shared workspace


def test_bad_gateway_url_is_one_line(workspace: Path) -> None:
    result = _codeagent(
        "run",
        "x",
        "--model",
        "m",
        "--workdir",
        str(workspace),
        "--gateway-url",
        "ftp://nowhere",
        env={},
    )
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "gateway URL must start with http" in result.stderr.strip().splitlines()[-1]


def test_resume_runs_on_the_gateway(gateway: Gateway, workspace: Path, scripted_model: Any) -> None:
    token = {"CODEAGENT_GATEWAY_TOKEN": gateway.token}
    model = ("--model", "m", "--base-url", scripted_model.url, "--gateway-url", gateway.url)
    out = workspace / "s.ipynb"
    scripted_model.set_script([tool_calls(("run_cell", {"code": "x = 41"})), text("set")])
    ran = _codeagent(
        "run", "set x", *model, "--workdir", str(workspace), "--out", str(out), env=token
    )
    assert ran.returncode == 0, ran.stderr

    scripted_model.set_script([tool_calls(("run_cell", {"code": "print(x + 1)"})), text("42")])
    resumed = _codeagent(
        "resume", str(out), "add one", *model, "--workdir", str(workspace), env=token
    )
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.splitlines()[0].startswith("sandbox: bwrap")
    meta = nbformat.read(out, as_version=4).metadata.codeagent
    assert meta.enforcement["backend"] == f"gateway {gateway.url}"  # not a local kernel
    assert "42" in json.dumps(
        [c.get("outputs", []) for c in nbformat.read(out, as_version=4).cells]
    )
