"""Statistics (hard): weather readings where missing values are written as numbers, a
different sentinel per sensor (``-99.9`` for temperature, ``9999`` for rain)."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

from ._common import Fail, Script, answer_has_words, as_float, checker, read_rows, rng, write_csv

CATEGORY = "statistics"
TIER = "hard"
TRAP = "missing readings are -99.9 and 9999, numbers like any other: seen only in the data"
MAX_STEPS = 25
PROMPT = """
readings.csv has the daily readings of our five weather stations for 2023 (temperature in
degrees C, rainfall in mm). For each station give the mean temperature, the standard deviation
of the temperature and the total rainfall: save station_summary.csv with columns station,
mean_temp, std_temp, total_rain. Which station was the warmest?
"""
STATIONS = {"Alpha": 9.1, "Brook": 10.4, "Cairn": 7.2, "Dune": 11.0, "Eyrie": 11.3}
FAULTY = {"Alpha": 0.02, "Brook": 0.05, "Cairn": 0.01, "Dune": 0.03, "Eyrie": 0.14}


def _readings() -> list[tuple[str, dt.date, float | None, float | None]]:
    r = rng(2828)
    rows = []
    for station, mean in STATIONS.items():
        for day in range(365):
            date = dt.date(2023, 1, 1) + dt.timedelta(days=day)
            season = -8.5 * math.cos(2 * math.pi * (day - 15) / 365)
            temp = round(mean + season + float(r.normal(0, 2.5)), 1)
            rain = round(float(r.gamma(0.6, 4.0)) if r.random() < 0.45 else 0.0, 1)
            lost_temp = r.random() < FAULTY[station]
            lost_rain = r.random() < FAULTY[station] / 2
            rows.append((station, date, None if lost_temp else temp, None if lost_rain else rain))
    return rows


def setup(workdir: Path) -> None:
    rows = [
        (s, d.isoformat(), -99.9 if t is None else t, 9999 if p is None else p)
        for s, d, t, p in _readings()
    ]
    write_csv(workdir / "readings.csv", ["station", "date", "temp_c", "rain_mm"], rows)


def _summary() -> dict[str, tuple[float, float, float]]:
    out = {}
    for station in STATIONS:
        temps = [t for s, _, t, _ in _readings() if s == station and t is not None]
        rain = sum(p for s, _, _, p in _readings() if s == station and p is not None)
        mean = sum(temps) / len(temps)
        std = math.sqrt(sum((t - mean) ** 2 for t in temps) / (len(temps) - 1))
        out[station] = (mean, std, rain)
    return out


@checker
def check(workdir: Path, answer: str) -> str:
    want = _summary()
    rows = read_rows(workdir, "station_summary.csv")
    names = {"station", "mean_temp", "std_temp", "total_rain"}
    got = {}
    for row in rows:
        if not names <= set(row):
            raise Fail(f"station_summary.csv needs columns {sorted(names)} (it has {sorted(row)})")
        got[row["station"]] = [
            as_float(row[c], f"station_summary.csv {c}")
            for c in ("mean_temp", "std_temp", "total_rain")
        ]
    if set(got) != set(want):
        raise Fail(f"station_summary.csv has stations {sorted(got)}, expected {sorted(want)}")
    for station, (mean, std, rain) in want.items():
        mean_temp, std_temp, total_rain = got[station]
        # std: n-1 (pandas) or n (numpy) are both accepted; the sentinels move it far more.
        if (
            abs(mean_temp - mean) > 0.01
            or abs(std_temp - std) > 0.02
            or abs(total_rain - rain) > 0.1
        ):
            raise Fail(
                f"station_summary.csv {station}: mean {mean_temp:g}, std {std_temp:g}, rain "
                f"{total_rain:g}; expected {mean:.2f}, {std:.2f}, {rain:.1f}"
            )
    warmest = max(want, key=lambda s: want[s][0])
    others = [s for s in STATIONS if s != warmest and s.lower() in answer.lower()]
    answer_has_words(answer, [warmest], "the warmest station")
    if len(others) >= len(STATIONS) - 1:
        raise Fail("the answer names every station, not the warmest one")
    return f"station summary right; {warmest} was the warmest"


NAIVE = """\
import pandas as pd

df = pd.read_csv("readings.csv", parse_dates=["date"])
summary = df.groupby("station").agg(
    mean_temp=("temp_c", "mean"), std_temp=("temp_c", "std"), total_rain=("rain_mm", "sum")
).round(2)
summary.reset_index().to_csv("station_summary.csv", index=False)
print(summary)
print("warmest station:", summary["mean_temp"].idxmax())
"""
DESCRIBE = """\
import pandas as pd
df = pd.read_csv("readings.csv", parse_dates=["date"])
print(df.isna().sum().to_dict())
df.describe()
"""
SENTINELS = """\
print(df["temp_c"].value_counts().head(3))
print(df["rain_mm"].value_counts().head(3))
print(df.groupby("station")[["temp_c", "rain_mm"]].agg(["min", "max"]))
"""
CLEAN = """\
import numpy as np
clean = df.assign(
    temp_c=df["temp_c"].replace(-99.9, np.nan), rain_mm=df["rain_mm"].replace(9999, np.nan)
)
print("missing after cleaning:", clean[["temp_c", "rain_mm"]].isna().sum().to_dict())
summary = clean.groupby("station").agg(
    mean_temp=("temp_c", "mean"), std_temp=("temp_c", "std"), total_rain=("rain_mm", "sum")
).round(3)
summary.reset_index().to_csv("station_summary.csv", index=False)
print(summary)
print("warmest:", summary["mean_temp"].idxmax())
"""
TEMP_ONLY = CLEAN.replace(', rain_mm=df["rain_mm"].replace(9999, np.nan)', "")


def _warmest() -> str:
    summary = _summary()
    return max(summary, key=lambda s: summary[s][0])


SOLVED = Script(
    [DESCRIBE, SENTINELS, CLEAN],
    f"Saved station_summary.csv. {_warmest()} was the warmest station.",
    [
        "",
        "No NaN, yet temp_c has a minimum of -99.9 and rain_mm a maximum of 9999: sentinels?",
        "-99.9 (temperature) and 9999 (rain) recur and are physically impossible: missing.",
    ],
)
WRONG = Script(
    [DESCRIBE, TEMP_ONLY],
    "Saved station_summary.csv; the warmest station is named in the output above.",
)
