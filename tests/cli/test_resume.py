"""``codeagent resume``: a real process, real sandboxes, the scripted model's request log."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from tests.cli.in_process import codeagent_here
from tests.cli.test_cli import codeagent, one_line_error
from tests.scripted_model import text, tool_calls


def _cell(code: str) -> dict:
    return tool_calls(("run_cell", {"code": code}))


def _record(scripted_model, tmp_path: Path, steps: list[str]) -> tuple[Path, Path]:
    """Run a session whose steps each run one cell, then answer; returns (notebook, workdir)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    scripted_model.set_script([*(_cell(code) for code in steps), text("done")])
    out = tmp_path / "s.ipynb"
    args = ("run", "build it", "--model", "m", "--base-url", scripted_model.url)
    result = codeagent(*args, "--workdir", str(ws), "--out", str(out))
    assert result.returncode == 0, result.stderr
    return out, ws


def _outputs(nb: nbformat.NotebookNode) -> list[str]:
    texts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            texts.append("".join(out.get("text", "")))
    return texts


def test_fork_at_step_2_has_the_state_of_step_2(scripted_model, tmp_path: Path) -> None:
    steps = [
        "a = 1\nopen('f1.txt', 'w').write('one')",
        "b = 2\nopen('f2.txt', 'w').write('two')",
        "c = 3\nopen('f3.txt', 'w').write('three')\nopen('f1.txt', 'w').write('changed')",
    ]
    session, ws = _record(scripted_model, tmp_path, steps)
    meta = nbformat.read(session, as_version=4).metadata.codeagent
    assert [(s["run"], s["step"]) for s in meta.snapshots] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert meta.snapshots[2]["changed"] == ["f2.txt"]
    before = len(scripted_model.requests)

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    fork = tmp_path / "fork.ipynb"
    check = "print(a, b, 'c' in globals(), open('f1.txt').read())"
    scripted_model.set_script([_cell(check), text("checked")])
    args = ("resume", str(session), "check the state", "--from-step", "2")
    model = ("--model", "m", "--base-url", scripted_model.url)
    into = ("--workdir", str(fresh), "--snapshots-from", str(ws), "--out", str(fork))
    result = codeagent(*args, *model, *into)
    assert result.returncode == 0, result.stderr
    assert "restored from step 2 (2 cells re-run" in result.stderr
    assert (fresh / "f2.txt").read_text() == "two"
    assert not (fresh / "f3.txt").exists()
    nb = nbformat.read(fork, as_version=4)
    nbformat.validate(nb)
    logged = [e for e in nb.metadata.codeagent.events if e["type"] == "session_restored"]
    assert [e["from_step"] for e in logged] == [2]  # in the notebook's event log too
    assert "1 2 False one\n" in _outputs(nb)  # a, b present; c (step 3) absent; f1 of step 2
    parent = nb.metadata.codeagent.parent
    assert parent["session_id"] == meta.session_id and parent["step"] == 2

    first = scripted_model.requests[before]["messages"]
    sent = json.dumps(first)
    assert first[1] == {"role": "user", "content": "build it"}
    assert "f2.txt" in sent and "f3.txt" not in sent  # history cut at step 2
    assert "restored from step 2" in first[-2]["content"]
    assert first[-1]["role"] == "user"  # the request, after the budget it has left
    assert first[-1]["content"].startswith("[budget left: ")
    assert first[-1]["content"].endswith("]\n\ncheck the state")


def test_resume_at_the_end_reports_a_cell_that_now_fails(scripted_model, tmp_path: Path) -> None:
    ws_steps = [
        "import os\nx = open('once.txt').read()\nos.remove('once.txt')",
        "y = x.upper()\nopen('y.txt', 'w').write(y)",
    ]
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "once.txt").write_text("hello")
    scripted_model.set_script([*(_cell(c) for c in ws_steps), text("done")])
    session = tmp_path / "s.ipynb"
    args = ("run", "go", "--model", "m", "--base-url", scripted_model.url, "--workdir", str(ws))
    assert codeagent(*args, "--out", str(session)).returncode == 0
    (ws / "y.txt").unlink()  # gone meanwhile: the snapshot brings it back
    before = len(scripted_model.requests)

    scripted_model.set_script([_cell("print(open('y.txt').read(), 'y' in globals())"), text("ok")])
    model = ("--model", "m", "--base-url", scripted_model.url)
    result = codeagent("resume", str(session), "what is y?", *model, cwd=ws)  # where it ran
    assert result.returncode == 0, result.stderr
    assert "cell 1 (step 1) failed on re-run: FileNotFoundError" in result.stderr
    assert (ws / "y.txt").read_text() == "HELLO"
    nb = nbformat.read(session, as_version=4)  # the same notebook, one run more
    assert [r["prompt"] for r in nb.metadata.codeagent.runs] == ["go", "what is y?"]
    assert nb.metadata.codeagent.restores[0]["cells_rerun"] == 2
    assert "HELLO False\n" in _outputs(nb)  # y's cell failed too: reported, not hidden
    seqs = [e["seq"] for e in nb.metadata.codeagent.events]
    assert seqs == sorted(set(seqs))
    first = scripted_model.requests[before]["messages"]
    assert [m["role"] for m in first].count("tool") == 2  # the whole earlier conversation
    assert "FileNotFoundError" in first[-2]["content"]


def test_resume_bad_input_is_one_line(scripted_model, tmp_path: Path, capsys, monkeypatch) -> None:
    """One real process (exit status, stderr); the other refusals through the same entry
    point in this process."""
    session, _ = _record(scripted_model, tmp_path, ["z = 1"])
    model = ("--model", "m", "--base-url", scripted_model.url)
    result = codeagent("resume", str(session), "p", "--from-step", "7", *model)
    assert result.returncode == 2
    assert "step 7 is not in s.ipynb (its steps: 1, 2)" in one_line_error(result)
    missing = codeagent_here(
        capsys, monkeypatch, "resume", str(tmp_path / "nope.ipynb"), "p", *model
    )
    assert missing.returncode == 2 and "not found" in one_line_error(missing)
    (tmp_path / "plain.ipynb").write_text(nbformat.writes(nbformat.v4.new_notebook()))
    plain = codeagent_here(
        capsys, monkeypatch, "resume", str(tmp_path / "plain.ipynb"), "p", *model
    )
    assert plain.returncode == 2 and "not a codeagent session" in one_line_error(plain)
