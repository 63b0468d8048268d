"""What every benchmark prints its numbers with: a Markdown table and a percentile.

The benchmarks' tables go into docs and pull requests as they are printed, so they share
one way to write them (GitHub Markdown, numbers right-aligned) and one percentile, so a
p95 in one table means what it means in the next.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def pct(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (``0.95`` for p95) of ``values``; NaN for none."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def table(header: Sequence[str], rows: Iterable[Sequence[object]], align: str = "") -> str:
    """A Markdown table; ``align`` has one letter a column, ``l`` or ``r`` (default: the
    first column left, the others right, as numbers read best)."""
    align = align or "l" + "r" * (len(header) - 1)
    if len(align) != len(header):
        raise ValueError(f"align {align!r} does not match {len(header)} columns")
    rule = "|" + "".join("---:|" if a == "r" else "---|" for a in align)
    lines = ["| " + " | ".join(header) + " |", rule]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)
