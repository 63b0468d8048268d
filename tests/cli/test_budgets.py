"""The budgets a model can plan with, end to end through ``codeagent run``: what the first
request says about steps and the fresh kernel, and ``--max-wall-time`` / ``--max-tokens``
stopping a run (a real process, a real sandbox, the scripted model)."""

from __future__ import annotations

from importlib import metadata

import nbformat
import pytest

from tests.cli.test_capable_tools import codeagent
from tests.scripted_model import delay, text, tool_calls


def test_the_first_request_says_what_a_step_is_and_that_the_kernel_is_fresh(
    scripted_model, tmp_path
):
    workdir = tmp_path / "ws"
    workdir.mkdir()
    scripted_model.set_script(
        [tool_calls(("run_cell", {"code": "1"}), ("run_cell", {"code": "2"})), text("done")]
    )
    result, _ = codeagent(scripted_model, workdir, "--max-steps", "7")
    assert result.returncode == 0, result.stderr
    first, second = scripted_model.requests
    system = first["messages"][0]["content"]
    assert "A step is one reply of yours, however many tool calls it holds" in system
    asked = first["messages"][1]["content"]
    assert asked.startswith("[budget left: 7 of 7 steps, 30 min, 2M tokens]\n\n## Context")
    assert "Your sandbox kernel is fresh" in asked and "import what you use" in asked
    pandas = pytest.importorskip("pandas")
    assert f"pandas {metadata.version('pandas')}" in asked and pandas.__version__ in asked
    # two tool calls in one reply cost one step, as the system message said
    assert (
        second["messages"][-1]["content"].split("\n")[-1].startswith("[budget left: 6 of 7 steps, ")
    )
    assert second["messages"][0]["content"] == system  # byte-stable across steps


def test_max_wall_time_stops_a_run_against_a_slow_model(scripted_model, tmp_path):
    workdir = tmp_path / "ws"
    workdir.mkdir()
    scripted_model.set_script([delay(60, text("too late"))])
    result, out = codeagent(scripted_model, workdir, "--max-wall-time", "2")
    assert result.returncode == 1, result.stderr
    assert "wall-time budget of 2 s used up" in result.stderr + result.stdout
    assert "too late" not in result.stdout
    meta = nbformat.read(out, as_version=4).metadata["codeagent"]
    assert '"max_wall_s": 2.0' in str(meta).replace("'", '"')


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--max-wall-time", "nan"), "must be a finite number of seconds"),
        (("--max-wall-time", "-1"), "must be a positive number"),
        (("--max-tokens", "0"), "must be a positive whole number"),
    ],
)
def test_bad_budgets_are_refused_in_one_line(scripted_model, tmp_path, flags, said):
    result, _ = codeagent(scripted_model, tmp_path, *flags)
    assert result.returncode == 2 and said in result.stderr
    assert "Traceback" not in result.stderr
