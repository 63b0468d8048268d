"""Aggregate: total revenue per region, where the columns are not named as asked."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from ._common import Script, checker, expect_table, keyed, read_rows, rng, write_csv

CATEGORY = "aggregate"
TRAP = "the columns are 'Region ' and 'Revenue (EUR)': row['revenue'] raises KeyError"
PROMPT = """
orders.csv lists orders. Compute the total revenue per region and save it as region_totals.csv
with columns region and revenue (one row per region).
"""
REGIONS = ["North", "South", "East", "West"]


def _rows() -> list[tuple[int, str, float]]:
    r = rng(404)
    return [(i, REGIONS[int(r.integers(4))], round(float(r.gamma(3, 120)), 2)) for i in range(300)]


def setup(workdir: Path) -> None:
    write_csv(workdir / "orders.csv", ["order_id", "Region ", "Revenue (EUR)"], _rows())


def _totals() -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for _, region, revenue in _rows():
        totals[region] += revenue
    return dict(totals)


@checker
def check(workdir: Path, answer: str) -> str:
    got = keyed(read_rows(workdir, "region_totals.csv"), "region", "revenue", "region_totals.csv")
    expect_table(got, _totals(), "revenue", rel=1e-4)
    return "4 regional totals match"


FIRST = """\
import csv
from collections import defaultdict
rows = list(csv.DictReader(open("orders.csv")))
totals = defaultdict(float)
for row in rows:
    totals[row["region"]] += float(row["revenue"])
"""
SEE = "print(list(rows[0]))"
FIXED = """\
totals = defaultdict(float)
for row in rows:
    totals[row["Region "]] += float(row["Revenue (EUR)"])
with open("region_totals.csv", "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["region", "revenue"])
    writer.writerows(sorted(totals.items()))
print(dict(totals))
"""
AVERAGE = FIXED.replace(
    "writer.writerows(sorted(totals.items()))",
    "counts = {k: sum(r['Region '] == k for r in rows) for k in totals}\n"
    "    writer.writerows((k, v / counts[k]) for k, v in sorted(totals.items()))",
)
SOLVED = Script(
    [FIRST, SEE, FIXED],
    "Saved region_totals.csv with the revenue of each of the four regions.",
    [
        "",
        "No 'region' column; looking at the header.",
        "The header has 'Region ' and 'Revenue (EUR)'.",
    ],
)
WRONG = Script([FIRST, SEE, AVERAGE], "Saved region_totals.csv.")
