"""``--start zygote``: the run's sandbox is a fork of a zygote started for its workspace,
with the data stack imported; the enforcement line says so; combinations no zygote serves
are refused in one line before the model is asked."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from codeagent_jupyter.sandbox import bubblewrap
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
