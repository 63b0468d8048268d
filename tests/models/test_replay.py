"""ReplayModel: recorded turns back in order, and a clear error when the run diverges."""

from __future__ import annotations

import pytest

from codeagent_jupyter.core.ports import Model, Usage
from codeagent_jupyter.errors import ReplayError
from codeagent_jupyter.models import ReplayModel
from tests.scripted_model import text, tool_calls

CALL = tool_calls(("run_cell", {"code": "print(1)"}), content="Checking.")["message"]
ANSWER = text("It printed 1.")["message"]


async def test_serves_turns_in_order_and_then_refuses() -> None:
    model = ReplayModel([CALL, ANSWER])
    deltas: list[str] = []
    assert isinstance(model, Model) and (model.name, model.base_url) == ("recorded", "recorded")

    first = await model.complete([{"role": "user", "content": "go"}], [], on_text=deltas.append)
    first.message["tool_calls"][0]["id"] = "mutated"  # the caller's copy, not the recording
    second = await model.complete([], [], on_text=deltas.append)

    assert first.message["tool_calls"][0]["function"] == CALL["tool_calls"][0]["function"]
    assert second.message == ANSWER and second.usage == Usage()
    assert deltas == ["Checking.", "It printed 1."]
    with pytest.raises(ReplayError, match=r"has 2 model turns .* asked for turn 3: .*diverged"):
        await model.complete([], [])


@pytest.mark.parametrize(
    "turn",
    [
        "not a dict",
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": ["parts"]},
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "x"}}]},
    ],
)
def test_rejects_turns_that_are_not_assistant_messages(turn: object) -> None:
    with pytest.raises(ReplayError, match="recorded turn 2"):
        ReplayModel([ANSWER, turn])  # type: ignore[list-item]
