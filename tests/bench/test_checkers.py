"""Every checker of the easy tier proven both ways, offline: its solving recording passes,
its wrong one fails (the hard tier: ``test_hard_tier``).

The recordings (``bench/tasks/recordings``) are replayed through the real agent loop in a
real sandbox kernel by ``agent_eval.py --model recorded``; only the model's turns are
recorded. One kernel per worker is shared (``--shared-kernel``) to keep this cheap: each
task still runs in its own folder with an empty namespace.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.agent_eval import main
from bench.tasks import CATEGORIES, load_tasks

TASKS = [t.name for t in load_tasks(tier="easy")]


def _replay(out: Path, variant: str) -> dict[str, dict]:
    code = main(
        [
            "--model",
            "recorded",
            "--recording",
            variant,
            "--shared-kernel",
            "--parallel",
            "2",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    runs = json.loads((out / "results.json").read_text())["runs"]
    return {r["task"]: r for r in runs}


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return _replay(tmp_path_factory.mktemp("solved"), "solved")


@pytest.fixture(scope="module")
def wrong(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    return _replay(tmp_path_factory.mktemp("wrong"), "wrong")


def test_the_suite_has_the_shape_the_issue_asks_for() -> None:
    tasks = load_tasks(tier="easy")
    assert len(tasks) >= 20
    assert {t.category for t in tasks} == set(CATEGORIES)
    assert sum(bool(t.trap) for t in tasks) * 3 >= len(tasks)  # a third need self-correction
    for task in tasks:
        assert task.recording("solved").is_file() and task.recording("wrong").is_file(), task
    assert [t.name for t in load_tasks("plotting", "easy")] == [
        "bar_chart",
        "two_panels",
        "top5_barh",
    ]


@pytest.mark.parametrize("name", TASKS)
def test_checker_accepts_the_solving_session(solved: dict[str, dict], name: str) -> None:
    run = solved[name]
    assert run["status"] == "answered", run["reason"]
    assert run["passed"], run["reason"]


@pytest.mark.parametrize("name", TASKS)
def test_checker_rejects_the_wrong_session(wrong: dict[str, dict], name: str) -> None:
    run = wrong[name]
    assert run["status"] == "answered", run["reason"]  # it ran to its end, and was wrong
    assert not run["passed"], f"the checker accepted a wrong result: {run['reason']}"
    assert run["reason"]


def test_self_correction_is_counted(solved: dict[str, dict]) -> None:
    """The solving sessions of trap tasks hit an error first and get past it."""
    assert solved["clean_prices"]["recovered"] == 1
    assert solved["weekly_dayfirst"]["recovered"] == 1
    assert solved["bar_chart"]["recovered"] == 0
