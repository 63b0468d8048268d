"""Time series: a daily sensor series with missing days, filled by linear interpolation."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np

from ._common import Fail, Script, answer_has_number, checker, keyed, read_rows, rng, write_csv

CATEGORY = "time series"
TRAP = ""
PROMPT = """
sensor.csv has daily readings (date, value) for January to March 2024, but some days are
missing. Make a complete daily series from the first to the last date, fill the missing days
by linear interpolation between their neighbours, and save it as filled.csv with columns date
and value. How many days did you fill?
"""
START = dt.date(2024, 1, 1)


def _series() -> tuple[list[str], np.ndarray, np.ndarray]:
    r = rng(1010)
    days = 91
    values = np.round(20 + 5 * np.sin(np.arange(days) / 9) + r.normal(0, 0.5, days), 3)
    present = r.random(days) > 0.2
    present[0] = present[-1] = True
    dates = [(START + dt.timedelta(days=i)).isoformat() for i in range(days)]
    return dates, values, present


def setup(workdir: Path) -> None:
    dates, values, present = _series()
    write_csv(
        workdir / "sensor.csv",
        ["date", "value"],
        [(d, v) for d, v, p in zip(dates, values, present, strict=True) if p],
    )


@checker
def check(workdir: Path, answer: str) -> str:
    dates, values, present = _series()
    x = np.arange(len(dates))
    want = dict(zip(dates, np.interp(x, x[present], values[present]), strict=True))
    got = keyed(read_rows(workdir, "filled.csv"), "date", "value", "filled.csv")
    got = {d[:10]: v for d, v in got.items()}
    if set(got) != set(want):
        raise Fail(f"filled.csv has {len(got)} dates, expected all {len(want)} days")
    off = [d for d in want if abs(got[d] - want[d]) > 1e-3]
    if off:
        raise Fail(f"filled.csv values differ from linear interpolation on {off[:3]}")
    answer_has_number(answer, int((~present).sum()), "the number of filled days")
    return f"{len(want)} days, {int((~present).sum())} filled"


FILL = """\
import csv, datetime as dt
import numpy as np
rows = list(csv.DictReader(open("sensor.csv")))
known = {dt.date.fromisoformat(r["date"]): float(r["value"]) for r in rows}
first, last = min(known), max(known)
days = [first + dt.timedelta(days=i) for i in range((last - first).days + 1)]
x = np.array([(d - first).days for d in known])
values = np.interp(np.arange(len(days)), x, list(known.values()))
with open("filled.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["date", "value"])
    w.writerows((d.isoformat(), round(v, 4)) for d, v in zip(days, values))
print(len(days), "days,", len(days) - len(known), "filled")
"""
FORWARD = FILL.replace(
    "values = np.interp(np.arange(len(days)), x, list(known.values()))",
    "values, last_seen = [], None\n"
    "for d in days:\n"
    "    last_seen = known.get(d, last_seen)\n"
    "    values.append(last_seen)",
)
_FILLED = int((~_series()[2]).sum())
SOLVED = Script([FILL], f"Saved filled.csv with 91 days; I filled {_FILLED} missing days.")
WRONG = Script([FORWARD], f"Saved filled.csv; {_FILLED} days were filled forward.")
