"""``update_plan``: the model's checklist, validated and normalised; declared here."""

from __future__ import annotations

from typing import Any

from ..core.outcome import ToolOutcome
from ..errors import ToolArgumentError
from ..traits import ToolTraits
from ._schema import Tool, obj

STATUSES = ("pending", "in_progress", "done")


def normalise(steps: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Strip step texts and refuse empty ones; statuses are already checked by the schema."""
    plan = []
    for i, item in enumerate(steps):
        text = " ".join(item["step"].split())
        if not text:
            raise ToolArgumentError(f"update_plan: steps[{i}].step must not be empty")
        plan.append({"step": text, "status": item["status"]})
    return plan


def summary(plan: list[dict[str, str]]) -> str:
    """What the model is told: nothing it did not just send (the user sees the plan)."""
    return "ok"


async def _handle(box: Any, *, steps: list[dict[str, Any]], on_output: Any, limit: int) -> Any:
    steps_ = normalise(steps)
    return ToolOutcome(text=summary(steps_), plan=steps_)


UPDATE_PLAN = Tool(
    "update_plan",
    "Show the user your plan as a short checklist, if the work has several steps "
    "worth tracking; optional. Send the whole list each time; at most one step "
    "in_progress.",
    obj(
        ["steps"],
        steps={
            "type": "array",
            "minItems": 1,
            "description": "All steps of the plan, in order.",
            "items": obj(
                ["step", "status"],
                step={"type": "string", "description": "What this step does."},
                status={"type": "string", "enum": list(STATUSES)},
            ),
        },
    ),
    _handle,
    ToolTraits("none", shown_as="plan", over_mcp=False),
    prompt="update_plan shows the user a checklist; use it when the work has several steps "
    "worth tracking, skip it otherwise.",
    prompt_rank=70,
)
