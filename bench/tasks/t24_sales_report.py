"""Multi-step: clean, join, aggregate and plot — a monthly report from two raw tables."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path

from ._common import (
    Fail,
    Script,
    as_float,
    checker,
    expect_png_bars,
    read_rows,
    rng,
    write_csv,
)

CATEGORY = "multi-step"
TRAP = ""
PROMPT = """
sales.csv (date, sku, units) and products.csv (sku, category, unit_price) are raw exports;
units is sometimes missing (treat those rows as not sold). Build report.csv with columns month
(YYYY-MM), category and revenue (units x unit_price), one row per month and category, and a
bar chart of the total revenue per month, one bar per month, saved as monthly.png.
"""
CATS = {
    "A1": ("garden", 12.5),
    "A2": ("garden", 30.0),
    "B1": ("kitchen", 8.0),
    "B2": ("kitchen", 55.0),
    "C1": ("office", 4.25),
}


def _sales() -> list[tuple[dt.date, str, int | None]]:
    r = rng(2424)
    start = dt.date(2024, 1, 1)
    rows = []
    for _ in range(400):
        units = None if r.random() < 0.07 else int(r.integers(1, 12))
        rows.append(
            (start + dt.timedelta(days=int(r.integers(0, 182))), str(r.choice(list(CATS))), units)
        )
    return rows


def setup(workdir: Path) -> None:
    write_csv(
        workdir / "products.csv",
        ["sku", "category", "unit_price"],
        [(k, c, p) for k, (c, p) in CATS.items()],
    )
    write_csv(
        workdir / "sales.csv",
        ["date", "sku", "units"],
        [(d.isoformat(), s, "" if u is None else u) for d, s, u in _sales()],
    )


def _report() -> dict[tuple[str, str], float]:
    totals: dict[tuple[str, str], float] = defaultdict(float)
    for d, sku, units in _sales():
        if units is not None:
            totals[(d.isoformat()[:7], CATS[sku][0])] += units * CATS[sku][1]
    return dict(totals)


@checker
def check(workdir: Path, answer: str) -> str:
    want = _report()
    rows = read_rows(workdir, "report.csv")
    try:
        got = {(r["month"][:7], r["category"]): as_float(r["revenue"], "report.csv") for r in rows}
    except KeyError as exc:
        raise Fail(f"report.csv has no column {exc}") from None
    if set(got) != set(want):
        raise Fail(f"report.csv has {len(got)} month/category rows, expected {len(want)}")
    off = [k for k in want if abs(got[k] - want[k]) > 0.01]
    if off:
        raise Fail(f"report.csv revenue is wrong for {off[:3]}")
    months = len({m for m, _ in want})
    return "report.csv right; " + expect_png_bars(workdir, "monthly.png", months)


BUILD = """\
import csv
from collections import defaultdict
import matplotlib.pyplot as plt
products = {r["sku"]: r for r in csv.DictReader(open("products.csv"))}
report = defaultdict(float)
for r in csv.DictReader(open("sales.csv")):
    if not r["units"].strip():
        continue
    p = products[r["sku"]]
    report[(r["date"][:7], p["category"])] += int(r["units"]) * float(p["unit_price"])
with open("report.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["month", "category", "revenue"])
    w.writerows((m, c, round(v, 2)) for (m, c), v in sorted(report.items()))
monthly = defaultdict(float)
for (m, _), v in report.items():
    monthly[m] += v
fig, ax = plt.subplots(figsize=(8, 4))
ax.bar(sorted(monthly), [monthly[m] for m in sorted(monthly)])
ax.set(title="Revenue per month", ylabel="revenue")
fig.savefig("monthly.png")
plt.show()
print(dict(monthly))
"""
NO_PRICE = BUILD.replace('int(r["units"]) * float(p["unit_price"])', 'int(r["units"])')
SOLVED = Script([BUILD], "Saved report.csv (month x category revenue) and monthly.png (6 bars).")
WRONG = Script([NO_PRICE], "Saved report.csv and monthly.png.")
