"""Plotting: a bar chart with one bar per category, read back from the saved PNG."""

from __future__ import annotations

from pathlib import Path

from ._common import Script, checker, expect_png_bars, rng, write_csv

CATEGORY = "plotting"
TRAP = ""
PROMPT = """
expenses.csv lists expenses (date, category, amount). Make a bar chart of the total amount per
category, one bar per category, and save it as totals.png.
"""
CATEGORIES = ["rent", "food", "travel", "software", "hardware", "training", "misc"]


def setup(workdir: Path) -> None:
    r = rng(1515)
    rows = [
        (
            f"2024-05-{int(r.integers(1, 31)):02d}",
            CATEGORIES[int(r.integers(7))],
            round(float(r.gamma(2, 90)), 2),
        )
        for _ in range(150)
    ]
    write_csv(workdir / "expenses.csv", ["date", "category", "amount"], rows)


@checker
def check(workdir: Path, answer: str) -> str:
    return expect_png_bars(workdir, "totals.png", len(CATEGORIES))


PLOT = """\
import csv
from collections import defaultdict
import matplotlib.pyplot as plt
totals = defaultdict(float)
for r in csv.DictReader(open("expenses.csv")):
    totals[r["category"]] += float(r["amount"])
fig, ax = plt.subplots(figsize=(8, 4))
ax.bar(list(totals), list(totals.values()))
ax.set(title="Expenses per category", ylabel="amount")
fig.savefig("totals.png")
plt.show()
"""
SOLVED = Script([PLOT], "Saved totals.png: one bar per category, seven in all.")
WRONG = Script(
    [
        PLOT.replace(
            "ax.bar(list(totals), list(totals.values()))",
            "ax.bar(list(totals)[:5], list(totals.values())[:5])  # the top of the list",
        )
    ],
    "Saved totals.png.",
)
