"""The suite's results as people read them: the table, the success rates with their
intervals, the ratio of agent to one-shot, and a breakdown per tier when several ran."""

from __future__ import annotations

import math
import statistics
from typing import Any

from . import TIERS
from ._runner import Outcome

MODES = ("agent", "one-shot")


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval for k successes in n: honest for small n and 0 or n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def table(outcomes: list[Outcome]) -> str:
    head = f"{'task':<20} {'category':<13} {'mode':<8} {'passed':<6} {'steps':>5} "
    head += f"{'tokens':>9} {'wall s':>7} {'recovered':>9}  reason"
    lines = [head, "-" * len(head)]
    for o in outcomes:
        tokens = f"{'~' if o.estimated else ''}{o.tokens:,}"
        lines.append(
            f"{o.task:<20} {o.category:<13} {o.mode:<8} {'yes' if o.passed else 'no':<6} "
            f"{o.steps:>5} {tokens:>9} {o.wall_s:>7.1f} {o.recovered:>9}  {o.reason[:70]}"
        )
    return "\n".join(lines)


def summary(outcomes: list[Outcome]) -> tuple[str, dict[str, Any]]:
    lines, data = [], {}
    for mode in MODES:
        runs = [o for o in outcomes if o.mode == mode]
        if not runs:
            continue
        solved = [o for o in runs if o.passed]
        low, high = wilson(len(solved), len(runs))
        med_tokens = statistics.median(o.tokens for o in solved) if solved else None
        med_time = statistics.median(o.wall_s for o in solved) if solved else None
        data[mode] = {
            "solved": len(solved),
            "runs": len(runs),
            "rate": len(solved) / len(runs),
            "ci95": [low, high],
            "median_tokens_solved": med_tokens,
            "median_wall_s_solved": med_time,
        }
        medians = (
            f"median per solved task: {med_tokens:,.0f} tokens, {med_time:.1f} s"
            if solved
            else "no task solved"
        )
        lines.append(
            f"{mode:<8}: {len(solved)}/{len(runs)} solved = {len(solved) / len(runs):.0%} "
            f"(95% CI {low:.0%}-{high:.0%}); {medians}"
        )
    if len(data) == 2:
        agent, base = data["agent"]["rate"], data["one-shot"]["rate"]
        ratio = agent / base if base else None
        data["ratio"] = ratio
        shown = f"{ratio:.2f}x" if ratio is not None else "n/a (the baseline solved none)"
        lines.append(f"agent / one-shot success rate: {shown}")
    tiers = sorted({o.tier for o in outcomes}, key=TIERS.index)
    if len(tiers) > 1:
        data["tiers"] = {}
        for tier in tiers:
            text, data["tiers"][tier] = summary([o for o in outcomes if o.tier == tier])
            lines += [f"{tier} tier:", *(f"  {line}" for line in text.splitlines())]
    return "\n".join(lines), data
