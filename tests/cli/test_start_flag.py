"""``--start zygote``: the run's sandbox is a fork of a zygote started for its workspace,
with the data stack imported; the enforcement line says so; combinations no zygote serves
are refused in one line before the model is asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from codeagent_jupyter.sandbox import bubblewrap
from codeagent_jupyter.sandbox.stop import descendants, started_at
from codeagent_jupyter.sandbox.zygote_shared import STATE_FILE, SharedZygote
from tests.cli.in_process import codeagent_here
from tests.cli.test_cli import codeagent
from tests.scripted_model import ScriptedModelServer, text, tool_calls


def test_a_run_forked_from_a_zygote(scripted_model: ScriptedModelServer, tmp_path: Path) -> None:
    if bubblewrap.find() is None:
        pytest.skip("bubblewrap is not installed")
    probe = "sorted(os.listdir('/proc'))[:2]"
    code = f"import os, sys\nprint('pandas' in sys.modules, os.getuid(), {probe})"
    scripted_model.set_script([tool_calls(("run_cell", {"code": code})), text("Done.")])
    out = tmp_path / "s.ipynb"
    argv = ["run", "look", "--model", "m", "--base-url", scripted_model.url]
    argv += ["--workdir", str(tmp_path), "--out", str(out), "--start", "zygote"]
    result = codeagent(*argv)
    assert result.returncode == 0, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("sandbox: bwrap") and "start: zygote" in first, first
    nb = nbformat.read(out, as_version=4)
    printed = "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    assert "True 65534 ['1', '2']" in printed, printed  # imported ahead; pid 1 is its own
    # The zygote stays for the next run in this workspace, which forks from it at once.
    zygote = SharedZygote(tmp_path)
    first_zygote = json.loads((zygote.folder / STATE_FILE).read_text())["pid"]
    scripted_model.set_script([tool_calls(("run_cell", {"code": code})), text("Done.")])
    again = codeagent(*argv)
    assert again.returncode == 0, again.stderr
    assert json.loads((zygote.folder / STATE_FILE).read_text())["pid"] == first_zygote
    zygote.stop()


def test_a_run_killed_outright_takes_its_kernel_with_it(
    scripted_model: ScriptedModelServer, tmp_path: Path
) -> None:
    """The zygote outlives ``codeagent run``; the kernel it forked for a run must not:
    SIGKILL leaves the run no chance to shut it down, the kernel's lease ends it."""
    if bubblewrap.choose(network=False).bwrap is None:
        pytest.skip("no bubblewrap that can build namespaces here")
    code = "open('started', 'w').close()\nimport time\ntime.sleep(120)"
    scripted_model.set_script([tool_calls(("run_cell", {"code": code})), text("never")])
    argv = [sys.executable, "-m", "codeagent_jupyter.cli", "run", "wait", "--model", "m"]
    argv += ["--base-url", scripted_model.url, "--workdir", str(tmp_path), "--start", "zygote"]
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    run = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    zygote = SharedZygote(tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "started").exists(), "the cell never ran"
        root = json.loads((zygote.folder / STATE_FILE).read_text())["pid"]
        base = set(descendants(root))  # the zygote and its forks: the kernel among them
        run.kill()
        run.wait(10)
        deadline = time.monotonic() + 15
        while len(set(descendants(root))) > 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        left = set(descendants(root))
        assert len(left) <= 2 and left < base, f"the kernel outlived its run: {left}"
        assert started_at(root) is not None  # the zygote itself waits for the next run
    finally:
        run.kill()
        run.wait(10)
        zygote.stop()


def test_combinations_no_zygote_serves_are_refused_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedModelServer([text("never")]) as srv:
        argv = ["run", "x", "--model", "m", "--base-url", srv.url, "--workdir", str(tmp_path)]
        for flags, said in (
            (["--network", "policy"], "--start zygote has no egress broker"),
            (["--network", "host"], "--start zygote has no network"),
            (["--gateway-url", "http://127.0.0.1:9"], "--start zygote needs a local sandbox"),
        ):
            result = codeagent_here(capsys, monkeypatch, *argv, "--start", "zygote", *flags)
            assert result.returncode == 2
            assert result.stderr.strip().startswith(f"codeagent: error: {said}"), result.stderr
        assert srv.requests == []
