"""``bench/agent_eval.py`` as a user runs it: a real process, real sandboxes, a replayed or
scripted model, and the table, summary, notebooks and exit codes it promises."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from bench.agent_eval import main, wilson
from bench.tasks import load_tasks
from bench.tasks._runner import ONE_SHOT_SYSTEM
from tests.scripted_model import ScriptedModelServer, text, tool_calls

ROOT = Path(__file__).resolve().parents[2]
EVAL = [sys.executable, str(ROOT / "bench" / "agent_eval.py")]


def _run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([*EVAL, *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def test_recorded_run_prints_the_table_and_keeps_the_notebooks(tmp_path: Path) -> None:
    out = tmp_path / "out"
    names = ["clean_prices", "revenue_by_region", "find_setting"]
    result = _run("--model", "recorded", "--tasks", ",".join(names), "--out", str(out))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:8] == [
        "task",
        "category",
        "mode",
        "passed",
        "steps",
        "tokens",
        "wall",
        "s",
    ]
    at = lines[0].index
    rows = {line.split()[0]: line for line in lines[2:5]}
    assert set(rows) == set(names)
    assert all(row[at("passed") : at("steps")].strip() == "yes" for row in rows.values())
    recovered = {n: row[at("wall s") + 7 : at("reason")].strip() for n, row in rows.items()}
    assert recovered == {"clean_prices": "1", "revenue_by_region": "1", "find_setting": "0"}
    assert "agent   : 3/3 solved = 100% (95% CI 44%-100%)" in result.stdout
    for name in names:
        nb = nbformat.read(out / f"{name}.agent.ipynb", as_version=4)
        nbformat.validate(nb)
        assert nb.metadata["codeagent"]["status"] == "answered"
        assert any(c.cell_type == "code" and c.outputs for c in nb.cells)
    saved = json.loads((out / "results.json").read_text())
    assert saved["summary"]["agent"]["solved"] == 3


def test_a_step_budget_stops_the_run_and_fails_the_task(tmp_path: Path) -> None:
    result = _run(
        "--model", "recorded", "--tasks", "clean_prices", "--max-steps", "1", "--out", str(tmp_path)
    )
    assert result.returncode == 0, result.stderr
    run = json.loads((tmp_path / "results.json").read_text())["runs"][0]
    assert run["status"] == "max_steps" and not run["passed"]
    assert run["reason"].startswith("max_steps: step budget of 1 model calls used up;")
    assert "agent   : 0/1 solved = 0% (95% CI 0%-79%); no task solved" in result.stdout


def _one_shot_and_agent(tasks: dict[str, tuple[list[str], str, str]]):
    """A stateless scripted model: agent requests get the task's cells then its answer;
    one-shot requests (no tools, the baseline's system prompt) get one script."""

    def respond(messages: list[dict]) -> dict:
        prompt = messages[1]["content"]
        cells, answer, script = next(v for k, v in tasks.items() if k in prompt)
        if messages[0]["content"] == ONE_SHOT_SYSTEM:
            return text(f"Here is the script.\n```python\n{script}\n```")
        done = sum(1 for m in messages if m["role"] == "tool")
        if done < len(cells):
            return tool_calls(("run_cell", {"code": cells[done]}))
        return text(answer)

    return respond


def test_one_shot_baseline_beside_the_agent(tmp_path: Path) -> None:
    clean, find = load_tasks("clean_prices")[0], load_tasks("find_setting")[0]
    script = {
        # The same cells as one script: the first one fails on '$1,234.50' (the agent sees
        # the traceback and fixes it; the one-shot script just stops). find_setting's works.
        clean.prompt: (
            list(clean.solved.cells),
            clean.solved.answer,
            "\n".join(clean.solved.cells),
        ),
        find.prompt: (list(find.solved.cells), find.solved.answer, find.solved.cells[0]),
    }
    with ScriptedModelServer(_one_shot_and_agent(script)) as server:
        result = _run(
            "--base-url",
            server.url,
            "--model",
            "scripted",
            "--tasks",
            "clean_prices,find_setting",
            "--baseline",
            "one-shot",
            "--parallel",
            "2",
            "--out",
            str(tmp_path),
        )
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr
    assert "agent   : 2/2 solved" in result.stdout
    assert "one-shot: 1/2 solved" in result.stdout
    assert "agent / one-shot success rate: 2.00x" in result.stdout
    one_shot = [r for r in requests if r["messages"][0]["content"] == ONE_SHOT_SYSTEM]
    assert len(one_shot) == 2 and all("tools" not in r for r in one_shot)
    nb = nbformat.read(tmp_path / "find_setting.one-shot.ipynb", as_version=4)
    code = next(c for c in nb.cells if c.cell_type == "code")
    assert "services/billing/conf/prod.ini" in code.outputs[0]["text"]  # it really ran
    runs = json.loads((tmp_path / "results.json").read_text())["runs"]
    failed = next(r for r in runs if r["task"] == "clean_prices" and r["mode"] == "one-shot")
    assert not failed["passed"] and failed["reason"].startswith("script error; clean.csv was not")
    agent = next(r for r in runs if r["task"] == "clean_prices" and r["mode"] == "agent")
    assert agent["passed"] and agent["recovered"] == 1


BAD_ARGUMENTS = [
    (
        ["--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--parallel", "0"],
        "argument --parallel: must be a positive whole number",
    ),
    (["--model", "recorded", "--baseline", "one-shot"], "needs a live model"),
    (["--model", "recorded", "--max-steps", "-1"], "--max-steps: must be a positive"),
    (["--model", "recorded", "--tasks", "no_such_task"], "no task matches 'no_such_task'"),
    (["--model", "m"], "--base-url is required"),
    (["--model", "m", "--base-url", "x", "--baseline", "twice"], "invalid choice: 'twice'"),
    (["--model", "recorded", "--tier", "medium"], "invalid choice: 'medium'"),
    (
        ["--model", "recorded", "--tasks", "bank_statement"],
        "no task matches 'bank_statement' in the easy tier (try --tier hard)",
    ),
    (
        ["--model", "recorded", "--tier", "all", "--baseline", "one-shot"],
        "replays each task's naive script, and clean_prices, latin1_survey, dedupe_customers",
    ),
]
"""Refused before any task runs: by the argument parser, or by ``main`` (after the tasks are
picked). The first of each kind also runs as a process (``test_bad_arguments_as_a_process``)."""


@pytest.mark.parametrize(("args", "message"), [BAD_ARGUMENTS[0], BAD_ARGUMENTS[3]])
def test_bad_arguments_as_a_process(args: list[str], message: str) -> None:
    """The script's own exit status and stderr, in an environment without model settings."""
    result = subprocess.run(
        [*EVAL, *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize(("args", "message"), BAD_ARGUMENTS)
def test_bad_arguments_are_one_line_and_exit_2(
    args: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every refusal through the script's entry point in this process: its return value, or
    the status of the ``SystemExit`` the parser raises, is the process's exit status."""
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    try:
        status = main(args)
    except SystemExit as exc:
        status = exc.code
    captured = capsys.readouterr()
    assert status == 2
    assert message in captured.err and not captured.out
    assert len(captured.err.strip().splitlines()) == 1, captured.err


def test_wilson_interval() -> None:
    low, high = wilson(0, 10)
    assert low == 0 and 0.27 < high < 0.28
    low, high = wilson(3, 3)
    assert 0.43 < low < 0.44 and high == 1
    low, high = wilson(12, 24)
    assert 0.31 < low < 0.32 and 0.68 < high < 0.69
