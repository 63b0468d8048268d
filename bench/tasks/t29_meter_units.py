"""Time series (hard): a meter log whose unit changes midway (kWh, then Wh after a firmware
update), with nothing but the numbers to say so."""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from pathlib import Path

from ._common import (
    Script,
    answer_has_words,
    checker,
    expect_table,
    keyed,
    read_rows,
    rng,
    write_csv,
)

CATEGORY = "time series"
TIER = "hard"
TRAP = "from 14 June the meter reports Wh, not kWh (values x1000): seen only in the series"
MAX_STEPS = 25
PROMPT = """
meter.csv has the daily electricity consumption of our office for 2023, in kWh, as logged by
the smart meter. Give the consumption per month: save monthly_kwh.csv with columns month
(YYYY-MM) and kwh, and tell me which month used the most electricity.
"""
SWITCH = dt.date(2023, 6, 14)
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]  # fmt: skip


def _daily() -> list[tuple[dt.date, float]]:
    """The true daily kWh: heating in winter, weekends low."""
    r = rng(2929)
    rows = []
    for n in range(365):
        day = dt.date(2023, 1, 1) + dt.timedelta(days=n)
        base = 120 + 70 * math.cos(2 * math.pi * (n - 10) / 365)
        if day.weekday() >= 5:
            base *= 0.35
        rows.append((day, round(base * float(r.uniform(0.9, 1.1)), 3)))
    return rows


def setup(workdir: Path) -> None:
    rows = [(day.isoformat(), round(kwh * 1000) if day >= SWITCH else kwh) for day, kwh in _daily()]
    write_csv(workdir / "meter.csv", ["date", "consumption"], rows)


def _monthly() -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for day, kwh in _daily():
        totals[f"{day:%Y-%m}"] += kwh
    return dict(totals)


def _top() -> str:
    totals = _monthly()
    return MONTHS[int(max(totals, key=totals.__getitem__)[5:]) - 1]


@checker
def check(workdir: Path, answer: str) -> str:
    got = keyed(read_rows(workdir, "monthly_kwh.csv"), "month", "kwh", "monthly_kwh.csv")
    got = {k[:7]: v for k, v in got.items()}
    expect_table(got, _monthly(), "monthly_kwh.csv kwh", rel=2e-3)
    top = _top()
    if top.lower() not in answer.lower() and f"2023-{MONTHS.index(top) + 1:02d}" not in answer:
        answer_has_words(answer, [top], "the month that used the most")
    return f"monthly consumption right; {top} used the most"


NAIVE = """\
import pandas as pd

df = pd.read_csv("meter.csv", parse_dates=["date"])
monthly = df.groupby(df["date"].dt.strftime("%Y-%m"))["consumption"].sum().round(1)
monthly.rename("kwh").rename_axis("month").reset_index().to_csv("monthly_kwh.csv", index=False)
print(monthly)
print("highest month:", monthly.idxmax())
"""
FIRST = """\
import pandas as pd
df = pd.read_csv("meter.csv", parse_dates=["date"])
monthly = df.groupby(df["date"].dt.strftime("%Y-%m"))["consumption"].sum()
monthly
"""
JUMP = """\
ratio = df["consumption"] / df["consumption"].shift()
print(df.loc[ratio.abs() > 20, ["date", "consumption"]].assign(ratio=ratio.round(1)))
print(df.iloc[160:170])
"""
FIX = """\
switch = df.loc[ratio > 20, "date"].iloc[0]
df["kwh"] = df["consumption"].where(df["date"] < switch, df["consumption"] / 1000)
print(df.groupby(df["date"] >= switch)["kwh"].describe())
monthly = df.groupby(df["date"].dt.strftime("%Y-%m"))["kwh"].sum().round(1)
monthly.rename("kwh").rename_axis("month").reset_index().to_csv("monthly_kwh.csv", index=False)
print(monthly)
print("highest:", monthly.idxmax())
"""
BY_MONTH = """\
df["kwh"] = df["consumption"].where(df["date"] < "2023-06-01", df["consumption"] / 1000)
monthly = df.groupby(df["date"].dt.strftime("%Y-%m"))["kwh"].sum().round(1)
monthly.rename("kwh").rename_axis("month").reset_index().to_csv("monthly_kwh.csv", index=False)
print(monthly)
"""
SOLVED = Script(
    [FIRST, JUMP, FIX],
    f"Saved monthly_kwh.csv (the meter switched from kWh to Wh on {SWITCH:%d %B}; converted). "
    f"{_top()} used the most electricity.",
    [
        "",
        "From June the monthly totals are about 1000 times larger: a unit change? Finding it.",
        f"On {SWITCH:%d %B} the values jump x1000 and stay there: Wh from then on.",
    ],
)
WRONG = Script(
    [FIRST, BY_MONTH],
    f"Saved monthly_kwh.csv (Wh converted from June on). {_top()} used the most.",
)
