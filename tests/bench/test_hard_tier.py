"""The hard tier, offline: every task's solving recording passes its checker, its wrong
recording and its naive one-shot script fail it, through ``agent_eval.py --tier hard``.

The recorded run is the command CI runs (``--model recorded --tier hard --baseline
one-shot``: the agent replays the hand-scripted solving sessions, the baseline each task's
naive script). A scripted model on loopback sends naive scripts through the real ``openai``
client as a model's one-shot replies. Runs share one kernel per worker (``--shared-kernel``);
a task with limits of its own (a memory budget) gets its own sandbox.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from bench.agent_eval import main
from bench.tasks import CATEGORIES, load_tasks
from bench.tasks._report import summary
from bench.tasks._runner import ONE_SHOT_SYSTEM, Outcome, script_of
from tests.scripted_model import ScriptedModelServer, text

ROOT = Path(__file__).resolve().parents[2]
HARD = load_tasks(tier="hard")
NAMES = [t.name for t in HARD]
NOT_THE_DATA = ("ModuleNotFoundError", "ImportError", "SyntaxError", "NameError")
"""Errors that would make a naive script fail for a reason other than the task's data."""


def _eval(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, str(ROOT / "bench" / "agent_eval.py"), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=ROOT)


def _runs(out: Path) -> dict[tuple[str, str], dict]:
    runs = json.loads((out / "results.json").read_text())["runs"]
    return {(r["task"], r["mode"]): r for r in runs}


def _script_errors(notebook: Path) -> list[str]:
    nb = nbformat.read(notebook, as_version=4)
    return [
        out["ename"]
        for cell in nb.cells
        if cell.cell_type == "code"
        for out in cell.get("outputs", [])
        if out.get("output_type") == "error"
    ]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("hard-recorded")
    result = _eval(
        "--model", "recorded", "--tier", "hard", "--baseline", "one-shot",
        "--shared-kernel", "--parallel", "2", "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result, out


@pytest.fixture(scope="module")
def wrong(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict]:
    out = tmp_path_factory.mktemp("hard-wrong")
    args = ["--model", "recorded", "--recording", "wrong", "--tier", "hard", "--out", str(out)]
    assert main([*args, "--shared-kernel", "--parallel", "2"]) == 0
    return _runs(out)


def test_the_hard_tier_has_the_shape_the_issue_asks_for() -> None:
    assert len(HARD) >= 10
    assert {t.category for t in HARD} <= set(CATEGORIES)
    assert len({t.category for t in HARD}) >= 6
    for task in HARD:
        assert task.tier == "hard" and task.trap and task.naive, task.name
        assert task.recording("solved").is_file() and task.recording("wrong").is_file()
    assert not set(NAMES) & {t.name for t in load_tasks(tier="easy")}
    assert any(t.limits for t in HARD)  # the memory budget is the task's own


@pytest.mark.parametrize("name", NAMES)
def test_the_solving_recording_passes(recorded, name: str) -> None:
    run = _runs(recorded[1])[(name, "agent")]
    assert run["status"] == "answered", run["reason"]
    assert run["passed"], run["reason"]
    assert run["tier"] == "hard"


@pytest.mark.parametrize("name", NAMES)
def test_the_wrong_recording_fails(wrong, name: str) -> None:
    run = wrong[(name, "agent")]
    assert run["status"] == "answered", run["reason"]
    assert not run["passed"], f"the checker accepted a wrong result: {run['reason']}"


@pytest.mark.parametrize("name", NAMES)
def test_the_naive_script_fails_because_of_the_data(recorded, name: str) -> None:
    run = _runs(recorded[1])[(name, "one-shot")]
    assert not run["passed"], f"the naive script solved a hard task: {run['reason']}"
    errors = _script_errors(Path(run["notebook"]))
    assert not set(errors) & set(NOT_THE_DATA), errors
    nb = nbformat.read(run["notebook"], as_version=4)
    code = next(c.source for c in nb.cells if c.cell_type == "code")
    assert code.strip() == load_tasks(name, tier="hard")[0].naive.strip()  # what really ran


def test_the_recorded_run_prints_both_modes_and_keeps_the_tier(recorded) -> None:
    result, out = recorded
    n = len(NAMES)
    assert f"agent   : {n}/{n} solved = 100%" in result.stdout
    assert f"one-shot: 0/{n} solved = 0%" in result.stdout
    assert "agent / one-shot success rate: n/a (the baseline solved none)" in result.stdout
    saved = json.loads((out / "results.json").read_text())
    assert saved["tier"] == "hard" and {r["tier"] for r in saved["runs"]} == {"hard"}
    budget = load_tasks("lookalikes", tier="hard")[0].limits["memory_mb"]
    nb = nbformat.read(out / "lookalikes.agent.ipynb", as_version=4)
    assert nb.metadata["codeagent"]["limits"]["memory_mb"] == budget  # the task's own limit


def test_a_live_model_whose_one_shot_is_the_naive_script_fails_too(tmp_path: Path) -> None:
    """The same scripts as a model's one-shot replies, through the real ``openai`` client, on
    three tasks that fail three ways (a crash, a silent wrong table, a missed target); the
    agent side gives up at once (its solving sessions are proven by the recordings)."""
    tasks = load_tasks("bank_statement,shop_dates,demand_forecast", tier="hard")
    naive = {t.prompt: t.naive for t in tasks}

    def respond(messages: list[dict]) -> dict:
        if messages[0]["content"] != ONE_SHOT_SYSTEM:
            return text("I cannot tell without looking at the data.")
        script = next(s for prompt, s in naive.items() if prompt in messages[1]["content"])
        return text(f"Here is the script.\n```python\n{script}\n```")

    with ScriptedModelServer(respond) as server:
        result = _eval(
            "--base-url", server.url, "--model", "scripted", "--tier", "hard",
            "--tasks", ",".join(t.name for t in tasks), "--baseline", "one-shot",
            "--shared-kernel", "--parallel", "2", "--out", str(tmp_path),
        )  # fmt: skip
        requests = list(server.requests)
    assert result.returncode == 0, result.stderr
    assert "one-shot: 0/3 solved = 0%" in result.stdout
    one_shot = [r for r in requests if r["messages"][0]["content"] == ONE_SHOT_SYSTEM]
    assert len(one_shot) == 3 and all("tools" not in r for r in one_shot)
    runs = _runs(tmp_path)
    reasons = {t.name: runs[(t.name, "one-shot")]["reason"] for t in tasks}
    assert reasons["bank_statement"] == "script error; monthly.csv was not written"
    assert reasons["shop_dates"].startswith("monthly_revenue.csv revenue[2024-")
    assert reasons["demand_forecast"].startswith("the forecast's R² is 0.5")
    for task in tasks:
        nb = nbformat.read(runs[(task.name, "one-shot")]["notebook"], as_version=4)
        code = next(c.source for c in nb.cells if c.cell_type == "code")
        assert code == script_of(f"```python\n{task.naive}\n```"), task.name


def test_a_recorded_baseline_needs_a_naive_script_for_every_task(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--model", "recorded", "--tier", "all", "--tasks", "clean_prices,meter_units"]
    assert main([*args, "--baseline", "one-shot", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "agent_eval: error: --baseline one-shot with --model recorded replays each task's "
        "naive script, and clean_prices has none: their baseline needs a live model "
        "(--tier hard has a naive script for every task)"
    ]
    assert not (tmp_path / "results.json").exists()


def _outcome(task: str, tier: str, mode: str, passed: bool) -> Outcome:
    return Outcome(task, "aggregate", mode, passed, "", "answered", 1, 0, False, 1.0, 0, None, tier)


def test_a_run_over_both_tiers_is_summarised_per_tier() -> None:
    outcomes = [
        _outcome("a", "easy", "agent", True),
        _outcome("b", "hard", "agent", True),
        _outcome("c", "hard", "agent", False),
        _outcome("a", "easy", "one-shot", True),
        _outcome("b", "hard", "one-shot", False),
        _outcome("c", "hard", "one-shot", False),
    ]
    shown, data = summary(outcomes)
    lines = shown.splitlines()
    assert lines[0].startswith("agent   : 2/3 solved")
    assert lines[2] == "agent / one-shot success rate: 2.00x"
    assert lines[3] == "easy tier:" and lines[4].startswith("  agent   : 1/1 solved")
    assert "  agent / one-shot success rate: 1.00x" in lines
    hard = lines.index("hard tier:")
    assert lines[hard + 1].startswith("  agent   : 1/2 solved")
    assert lines[hard + 2].startswith("  one-shot: 0/2 solved")
    assert lines[hard + 3] == "  agent / one-shot success rate: n/a (the baseline solved none)"
    assert data["tiers"]["hard"]["agent"]["solved"] == 1 and data["tiers"]["easy"]["ratio"] == 1
    assert "tiers" not in summary(outcomes[1:3])[1]  # one tier: no breakdown
