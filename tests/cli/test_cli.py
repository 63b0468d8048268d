"""The ``codeagent`` command as a user runs it: a real process, real sandbox, scripted model."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from codeagent_jupyter.sandbox.bubblewrap import BWRAP_ENV
from tests.cli.in_process import codeagent_here
from tests.scripted_model import ScriptedModelServer, text, tool_calls

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def codeagent(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 120):
    full_env = {**os.environ, "OPENAI_API_KEY": "test-key", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "codeagent_jupyter.cli", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=timeout,
    )


def one_line_error(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_run_answers_and_writes_session(scripted_model, tmp_path):
    scripted_model.set_script(
        [
            tool_calls(
                (
                    "run_cell",
                    {"code": "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2]); plt.show()"},
                )
            ),
            text("Plotted."),
        ]
    )
    out = tmp_path / "s.ipynb"
    user_nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("df = load('sales.csv')")])
    nbformat.write(user_nb, tmp_path / "mine.ipynb")
    result = codeagent(
        "run",
        "plot something",
        "--model",
        "m",
        "--base-url",
        scripted_model.url,
        "--workdir",
        str(tmp_path),
        "--out",
        str(out),
        "--notebook",
        str(tmp_path / "mine.ipynb"),
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("sandbox: ")  # the isolation in force, said first
    assert result.stdout.splitlines()[0] == "Plotted."
    assert str(out) in result.stdout
    assert "run_cell" in result.stderr and "[image/png" in result.stderr
    first_user = scripted_model.requests[0]["messages"][1]["content"]
    assert "df = load('sales.csv')" in first_user and "plot something" in first_user
    nb = nbformat.read(out, as_version=4)
    nbformat.validate(nb)
    images = [
        o
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "image/png" in o.get("data", {})
    ]
    assert images
    assert "test-key" not in out.read_text()


def test_usage_errors_are_one_line(scripted_model, tmp_path, capsys, monkeypatch):
    """One real process per command (its exit status and stderr); the other refusals of
    ``run`` through the same entry point in this process."""
    bad_out = codeagent(
        "run", "x", "--model", "m", "--base-url", scripted_model.url, "--out", "/proc/nope/s.ipynb"
    )
    assert bad_out.returncode == 2 and "cannot write" in one_line_error(bad_out)
    missing = codeagent("replay", str(tmp_path / "missing.ipynb"), "--model", "recorded")
    assert missing.returncode == 2 and "not found" in one_line_error(missing)

    def here(*args: str, env: dict | None = None):
        return codeagent_here(capsys, monkeypatch, *args, env=env)

    no_key = here("run", "x", "--model", "m", env={"OPENAI_API_KEY": "", "OPENAI_BASE_URL": ""})
    assert no_key.returncode == 2 and "key" in one_line_error(no_key).lower()
    bad_flag = here("run", "x", "--max-steps", "zero")
    assert bad_flag.returncode == 2 and "--max-steps" in one_line_error(bad_flag)
    bogus = here("run", "x", "--isolation", "bogus")
    assert bogus.returncode == 2 and "invalid choice: 'bogus'" in one_line_error(bogus)


def test_unreachable_model_is_reported(tmp_path):
    result = codeagent(
        "run",
        "x",
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--workdir",
        str(tmp_path),
        "--out",
        str(tmp_path / "s.ipynb"),
        timeout=180,
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    last = result.stderr.splitlines()[-1]
    assert "http://127.0.0.1:9/v1 (connection refused)" in last and "model server" in last
    assert "retry" not in result.stderr  # nothing listens there: it is not tried again
    assert "(1 step, " in result.stderr  # the run's line counts its one step in English
    nbformat.validate(nbformat.read(tmp_path / "s.ipynb", as_version=4))


def test_without_bwrap_the_refusal_names_isolation_none(tmp_path):
    """The CLI's way to choose an unconfined sandbox is a flag, not the server's setting."""
    bin_dir = tmp_path / "bin"  # a PATH without bubblewrap (or unshare): the launcher's view
    bin_dir.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    result = codeagent(
        "run", "x", "--model", "m", "--base-url", "http://127.0.0.1:9/v1",
        "--workdir", str(work), "--out", str(work / "s.ipynb"),
        env={"PATH": str(bin_dir), BWRAP_ENV: "system"},  # not the bundled bwrap either
    )  # fmt: skip
    assert result.returncode == 1
    line = one_line_error(result)
    assert line.startswith("codeagent: error: sandbox refused to start: no ")
    assert "install bubblewrap" in line and "(--isolation none)" in line
    assert "read your files" in line and "allow_unconfined" not in line


@pytest.mark.parametrize("command", ["run", "resume", "replay"])
def test_every_flag_says_what_it_does(command):
    """``--help`` of each subcommand: every flag has a help text, none cut short."""
    from codeagent_jupyter.cli.main import _parser

    sub = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = sub.choices[command]
    for action in parser._actions:
        assert action.help, f"{command} {action.option_strings or action.dest} has no help"
        assert not action.help.rstrip().endswith(("into", "the", "a", ";")), action.help


def test_run_help_groups_its_flags_and_shows_examples():
    result = codeagent("run", "--help")
    assert result.returncode == 0
    help_text = result.stdout
    groups = ["model:", "session:", "sandbox limits:", "examples:"]
    positions = [help_text.index(f"\n{group}\n") for group in groups]
    assert positions == sorted(positions), help_text
    model = help_text[positions[0] : positions[1]]
    assert "--base-url" in model and "--max-output-tokens" in model
    assert "--memory-mb" in help_text[positions[2] : positions[3]]
    assert 'codeagent run "' in help_text[positions[3] :] and "--isolation none" in help_text
    resume = codeagent("resume", "--help").stdout
    assert "restored into" not in resume and "examples:" in resume


def test_killing_the_cli_mid_run_leaves_a_valid_notebook(tmp_path):
    script = [
        tool_calls(("run_cell", {"code": "print('first step')"})),
        tool_calls(("run_cell", {"code": "import time\ntime.sleep(100)"})),
        text("never"),
    ]
    out = tmp_path / "s.ipynb"
    with ScriptedModelServer(script) as srv:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "codeagent_jupyter.cli",
                "run",
                "x",
                "--model",
                "m",
                "--base-url",
                srv.url,
                "--workdir",
                str(tmp_path),
                "--out",
                str(out),
                "--cell-timeout",
                "120",
            ],
            env={**os.environ, "OPENAI_API_KEY": "k"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if len(srv.requests) >= 2:  # the second cell is running
                break
            time.sleep(0.1)
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    nb = nbformat.read(out, as_version=4)
    nbformat.validate(nb)
    assert any("first step" in json.dumps(c.get("outputs", [])) for c in nb.cells)


def test_replay_recorded_and_reexecute(tmp_path):
    demo = EXAMPLES / "demo.ipynb"
    replayed = tmp_path / "replayed.ipynb"
    work = tmp_path / "work"
    work.mkdir()
    result = codeagent(
        "replay", str(demo), "--model", "recorded", "--workdir", str(work), "--out", str(replayed)
    )
    assert result.returncode == 0, result.stderr
    assert "KeyError" in result.stderr  # the scripted mistake happens again ...
    # Six model turns ran four cells; a replay asks no model, so it counts no tokens; the
    # image is named, without the line written for a model that cannot see it.
    assert "(6 steps, 4 cells, " in result.stderr and ", no tokens counted)" in result.stderr
    assert "[image/png 687x354]" in result.stderr and "receives no images" not in result.stderr
    assert (work / "sales.csv").exists()  # ... and the real cells ran
    original = nbformat.read(demo, as_version=4)
    again = nbformat.read(replayed, as_version=4)
    nbformat.validate(again)
    code = lambda nb: [c.source for c in nb.cells if c.cell_type == "code"]  # noqa: E731
    assert code(again) == code(original)

    check = codeagent("replay", str(replayed), "--workdir", str(tmp_path / "work"))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "4 of 4 cells match" in check.stdout


def test_reexecute_reports_mismatch(tmp_path):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("print(6 * 7)")
    cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="41\n")]
    nb.cells = [cell]
    path = tmp_path / "s.ipynb"
    nbformat.write(nb, path)
    result = codeagent("replay", str(path), "--workdir", str(tmp_path))
    assert result.returncode == 1
    assert "MISMATCH" in result.stdout and "0 of 1 cells match" in result.stdout


@pytest.mark.parametrize("flag", ["--help"])
def test_help(flag):
    result = codeagent(flag)
    assert result.returncode == 0 and "replay" in result.stdout


def test_every_limit_flag_reaches_the_sandbox(scripted_model, tmp_path):
    """The limit flags come from ``SandboxLimits``' own declaration and are applied: a 1 MiB
    file-size cap stops a 2 MiB write, and the session records every value that was asked."""
    write = "open('big.bin', 'wb').write(b'x' * (2 << 20))"
    scripted_model.set_script([tool_calls(("run_cell", {"code": write})), text("Tried.")])
    out = tmp_path / "s.ipynb"
    work = tmp_path / "work"
    work.mkdir()
    flags = {
        "--memory-mb": "1024",
        "--cpu-seconds": "30",
        "--cell-timeout": "20",
        "--output-bytes": "50000",
        "--file-size-mb": "1",
        "--max-processes": "256",
        "--disk-mb": "64",
    }
    args = [a for pair in flags.items() for a in pair]
    result = codeagent(
        "run", "write", "--model", "m", "--base-url", scripted_model.url,
        "--workdir", str(work), "--out", str(out), *args,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    tool_reply = scripted_model.requests[1]["messages"][-1]["content"]
    assert "File too large" in tool_reply
    assert (work / "big.bin").stat().st_size <= 1 << 20
    limits = nbformat.read(out, as_version=4).metadata["codeagent"]["limits"]
    asked = {flag[2:].replace("-", "_"): float(value) for flag, value in flags.items()}
    assert {k: float(limits[k]) for k in asked} == asked
    assert limits["network"] is False


def test_the_command_starts_without_the_iri_grammar():
    """jsonschema's optional IRI checker costs seconds at every start; the command skips it
    and jsonschema (nbformat's validation included) still works."""
    code = (
        "import sys, codeagent_jupyter.cli, jsonschema, nbformat\n"
        "assert sys.modules['rfc3987_syntax'] is None\n"
        "nbformat.validate(nbformat.v4.new_notebook())\n"
        "jsonschema.validate(3, {'type': 'integer'})\n"
        "print('ok')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
