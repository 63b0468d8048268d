"""``update_plan``: the model's checklist, validated and normalised."""

from __future__ import annotations

from typing import Any

from ..errors import ToolArgumentError

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
