"""Time series: weekly totals from dates written day-first."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path

from ._common import Script, checker, expect_table, keyed, read_rows, rng, write_csv

CATEGORY = "time series"
TRAP = "dates are DD/MM/YYYY: month-first parsing fails on day 13 or silently swaps months"
PROMPT = """
deliveries.csv lists deliveries (date, parcels) from a European depot. Compute the total
parcels per week, weeks starting on Monday, and save it as weekly.csv with columns week_start
(the Monday, YYYY-MM-DD) and parcels.
"""
START = dt.date(2024, 2, 5)


def _rows() -> list[tuple[dt.date, int]]:
    r = rng(1111)
    return [
        (START + dt.timedelta(days=int(r.integers(0, 70))), int(r.integers(1, 40)))
        for _ in range(200)
    ]


def setup(workdir: Path) -> None:
    write_csv(
        workdir / "deliveries.csv",
        ["date", "parcels"],
        [(d.strftime("%d/%m/%Y"), n) for d, n in _rows()],
    )


def _weekly() -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for d, n in _rows():
        totals[(d - dt.timedelta(days=d.weekday())).isoformat()] += n
    return dict(totals)


@checker
def check(workdir: Path, answer: str) -> str:
    got = keyed(read_rows(workdir, "weekly.csv"), "week_start", "parcels", "weekly.csv")
    got = {k[:10]: v for k, v in got.items()}
    expect_table(got, _weekly(), "parcels")
    return f"{len(got)} weekly totals match"


MONTH_FIRST = """\
import csv, datetime as dt
from collections import defaultdict
rows = list(csv.DictReader(open("deliveries.csv")))
dates = [dt.datetime.strptime(r["date"], "%m/%d/%Y").date() for r in rows]
"""
DAY_FIRST = """\
dates = [dt.datetime.strptime(r["date"], "%d/%m/%Y").date() for r in rows]
weekly = defaultdict(int)
for d, r in zip(dates, rows):
    weekly[d - dt.timedelta(days=d.weekday())] += int(r["parcels"])
with open("weekly.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["week_start", "parcels"])
    w.writerows((k.isoformat(), v) for k, v in sorted(weekly.items()))
print(len(weekly), "weeks")
"""
SUNDAY = DAY_FIRST.replace("d.weekday()", "(d.weekday() + 1) % 7")
SOLVED = Script(
    [MONTH_FIRST, DAY_FIRST],
    "Saved weekly.csv with parcels per Monday-starting week.",
    ["", "The dates are day-first (13/02/2024); parsing them as DD/MM/YYYY."],
)
WRONG = Script([MONTH_FIRST, SUNDAY], "Saved weekly.csv.")
