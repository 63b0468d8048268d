"""Planning a resume from notebooks written before snapshots existed, and from cut-off runs."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from codeagent_jupyter.errors import ConfigError
from codeagent_jupyter.record.eventlog import decode_notebook
from codeagent_jupyter.record.resume import INTERRUPTED_CALL, conversation, plan
from tests.scripted_model.validation import conversation_problem

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
OLD = ["session_before_event_bus.ipynb", "demo_before_event_bus.ipynb"]


def _request(messages: list[dict]) -> dict:
    system = {"role": "system", "content": "s"}
    return {"model": "m", "messages": [system, *messages, {"role": "user", "content": "next"}]}


@pytest.mark.parametrize("name", OLD)
def test_old_notebooks_plan_a_resume_the_api_accepts(name: str) -> None:
    todo = plan(FIXTURES / name)
    assert todo.snapshot is None  # written before snapshots: files are not restored
    assert todo.cells and all(c.cell_type == "code" for _, c in todo.cells)
    assert conversation_problem(_request(todo.messages)) is None
    assert todo.messages[0]["role"] == "user"


def test_a_cut_keeps_the_steps_before_it() -> None:
    full = plan(FIXTURES / OLD[1])
    cut = plan(FIXTURES / OLD[1], step=1)
    assert cut.step == 1 and len(cut.cells) < len(full.cells)
    assert conversation_problem(_request(cut.messages)) is None
    assert len(cut.messages) < len(full.messages)
    with pytest.raises(ConfigError, match="step 99 is not in"):
        plan(FIXTURES / OLD[1], step=99)


def test_a_call_cut_off_mid_step_is_answered(tmp_path: Path) -> None:
    nb = nbformat.read(FIXTURES / OLD[1], as_version=4)
    events = nb.metadata.codeagent.events
    last_finished = max(i for i, e in enumerate(events) if e["type"] == "tool_call_finished")
    del events[last_finished:]  # as if killed before the call's result was saved
    path = tmp_path / "cut.ipynb"
    nbformat.write(nb, path)
    todo = plan(path)
    assert todo.messages[-1]["content"] == INTERRUPTED_CALL
    assert conversation_problem(_request(todo.messages)) is None


def test_a_call_cut_off_before_a_later_run_is_answered_before_its_prompt(tmp_path: Path) -> None:
    """A run whose task was cancelled inside a call (a pause, an interrupt), then another
    run: the call is answered before the next prompt, where the API needs its answer."""
    nb = nbformat.read(FIXTURES / OLD[1], as_version=4)
    events = nb.metadata.codeagent.events
    last_finished = max(i for i, e in enumerate(events) if e["type"] == "tool_call_finished")
    del events[last_finished:]
    first = next(e for e in events if e["type"] == "run_started")
    events.append({**first, "run_index": 1, "prompt": "and now the totals"})
    path = tmp_path / "cut-then-run.ipynb"
    nbformat.write(nb, path)
    messages = conversation(decode_notebook(nbformat.read(path, as_version=4)), 1, None)
    prompt = next(i for i, m in enumerate(messages) if m["content"] == "and now the totals")
    assert messages[prompt - 1]["content"] == INTERRUPTED_CALL
    assert conversation_problem(_request(messages)) is None
