"""Time series: spot the days that break from a rolling baseline."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np

from ._common import Fail, Script, checker, read_bytes, rng, write_csv

CATEGORY = "time series"
TRAP = ""
PROMPT = """
traffic.csv has daily page views (day, views) for 120 days. A few days are anomalous spikes
far above the recent level. Find them (for example, more than 3 standard deviations above
the mean of the previous 14 days) and write their dates, one per line (YYYY-MM-DD), to
anomalies.txt.
"""
START = dt.date(2023, 9, 1)
SPIKES = (23, 51, 77, 104)


def _views() -> np.ndarray:
    r = rng(1212)
    days = np.arange(120)
    views = 1000 + 3 * days + 80 * np.sin(2 * np.pi * days / 7) + r.normal(0, 25, 120)
    for s in SPIKES:
        views[s] *= 2.5
    return np.round(views).astype(int)


def setup(workdir: Path) -> None:
    write_csv(
        workdir / "traffic.csv",
        ["day", "views"],
        [((START + dt.timedelta(days=i)).isoformat(), int(v)) for i, v in enumerate(_views())],
    )


@checker
def check(workdir: Path, answer: str) -> str:
    want = {(START + dt.timedelta(days=s)).isoformat() for s in SPIKES}
    text = read_bytes(workdir, "anomalies.txt").decode("utf-8", errors="replace")
    got = {line.strip()[:10] for line in text.splitlines() if line.strip()}
    if got != want:
        raise Fail(f"anomalies.txt lists {sorted(got)}, expected {sorted(want)}")
    return "the 4 spikes, and nothing else"


DETECT = """\
import csv
import numpy as np
rows = list(csv.DictReader(open("traffic.csv")))
views = np.array([float(r["views"]) for r in rows])
found = []
for i in range(14, len(views)):
    window = views[i - 14:i]
    if views[i] > window.mean() + 3 * window.std():
        found.append(rows[i]["day"])
open("anomalies.txt", "w").write("\\n".join(found) + "\\n")
print(found)
"""
GLOBAL = """\
import csv
import numpy as np
rows = list(csv.DictReader(open("traffic.csv")))
views = np.array([float(r["views"]) for r in rows])
found = sorted(rows[i]["day"] for i in np.argsort(views)[-5:])  # "the top 5 days"
open("anomalies.txt", "w").write("\\n".join(found) + "\\n")
print(found)
"""
SOLVED = Script([DETECT], "Four spikes: they are listed in anomalies.txt.")
WRONG = Script([GLOBAL], "The anomalies are in anomalies.txt.")
