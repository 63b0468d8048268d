"""Plotting (hard): a bar chart checked from the saved PNG (bar count, order and relative
lengths), of data whose country labels mix ISO codes, names, case and stray spaces."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path

from ._common import Fail, Script, checker, png_bar_lengths, read_png, rng, write_csv

CATEGORY = "plotting"
TIER = "hard"
TRAP = "'DE', 'Germany', 'germany ' are one country: 15 labels for 6 countries, seen only in data"
MAX_STEPS = 25
PROMPT = """
downloads.csv has our app's daily downloads per country for the last quarter (date, country,
downloads). Make a bar chart of the total downloads per country, one bar per country, largest
first, and save it as downloads.png. Which country downloads the app most?
"""
LABELS = {
    "Germany": ["DE", "Germany", "germany ", "DE "],
    "France": ["FR", "France"],
    "United States": ["US", "USA", "United States", "us"],
    "Japan": ["JP", "Japan"],
    "Brazil": ["BR", "Brazil", "Brasil"],
    "India": ["IN", "India"],
}
SHARE = {"Germany": 1.0, "France": 0.55, "United States": 1.3, "Japan": 0.35, "Brazil": 0.8,
         "India": 1.15}  # fmt: skip
CODES = {"Germany": "DE", "France": "FR", "United States": "US", "Japan": "JP", "Brazil": "BR",
         "India": "IN"}  # fmt: skip


def _rows() -> list[tuple[str, str, str, int]]:
    """(date, country, label as written, downloads)."""
    r = rng(3535)
    rows = []
    for day in range(92):
        date = (dt.date(2024, 10, 1) + dt.timedelta(days=day)).isoformat()
        for country, labels in LABELS.items():
            # Each source system writes its own label; most days come from the main one.
            label = labels[0] if r.random() < 0.45 else str(r.choice(labels[1:]))
            rows.append((date, country, label, int(r.poisson(300 * SHARE[country]))))
    return rows


def setup(workdir: Path) -> None:
    rows = [(date, label, n) for date, _, label, n in _rows()]
    write_csv(workdir / "downloads.csv", ["date", "country", "downloads"], rows)


def _totals() -> dict[str, int]:
    totals: dict[str, int] = defaultdict(int)
    for _, country, _, n in _rows():
        totals[country] += n
    return dict(totals)


@checker
def check(workdir: Path, answer: str) -> str:
    totals = _totals()
    want = sorted(totals.values(), reverse=True)
    lengths = png_bar_lengths(read_png(workdir, "downloads.png"))
    if len(lengths) != len(want):
        raise Fail(
            f"downloads.png shows {len(lengths)} bars, expected {len(want)} (one per country)"
        )
    if lengths[0] < lengths[-1]:  # barh drawn bottom-up is still largest first
        lengths = lengths[::-1]
    top = max(lengths) or 1.0
    got = [length / top for length in lengths]
    expected = [v / want[0] for v in want]
    off = [i for i, (g, e) in enumerate(zip(got, expected, strict=True)) if abs(g - e) > 0.025]
    if off:
        shown = ", ".join(f"{g:.2f}" for g in got)
        raise Fail(
            f"downloads.png bar lengths relative to the longest are {shown}; expected "
            + ", ".join(f"{e:.2f}" for e in expected)
            + " (largest first)"
        )
    best = max(totals, key=totals.__getitem__)
    words = answer.replace("USA", "United States")
    if best.lower() not in words.lower() and f" {CODES[best]}" not in f" {answer}":
        raise Fail(f"the answer does not name {best} as the country with the most downloads")
    return f"downloads.png shows the six countries, largest first; {best} leads"


NAIVE = """\
import matplotlib.pyplot as plt
import pandas as pd

df = pd.read_csv("downloads.csv")
totals = df.groupby("country")["downloads"].sum().sort_values(ascending=False)
fig, ax = plt.subplots(figsize=(10, 5))
totals.plot.bar(ax=ax)
ax.set(title="Total downloads per country", ylabel="downloads", xlabel="")
fig.tight_layout()
fig.savefig("downloads.png")
print(totals)
print("top country:", totals.index[0])
"""
LOOK = """\
import pandas as pd
import matplotlib.pyplot as plt
df = pd.read_csv("downloads.csv")
print(df["country"].map(repr).value_counts())
"""
CANON = """\
names = {
    "de": "Germany", "germany": "Germany", "fr": "France", "france": "France",
    "us": "United States", "usa": "United States", "united states": "United States",
    "jp": "Japan", "japan": "Japan", "br": "Brazil", "brazil": "Brazil", "brasil": "Brazil",
    "in": "India", "india": "India",
}
df["name"] = df["country"].str.strip().str.lower().map(names)
assert df["name"].notna().all(), df.loc[df["name"].isna(), "country"].unique()
totals = df.groupby("name")["downloads"].sum().sort_values(ascending=False)
fig, ax = plt.subplots(figsize=(9, 4.5))
ax.bar(totals.index, totals.values)
ax.set(title="Downloads per country, last quarter", ylabel="downloads")
fig.tight_layout()
fig.savefig("downloads.png")
plt.show()
print(totals)
"""
CASE_ONLY = """\
df["name"] = df["country"].str.strip().str.title()
totals = df.groupby("name")["downloads"].sum().sort_values(ascending=False)
fig, ax = plt.subplots(figsize=(9, 4.5))
ax.bar(totals.index, totals.values)
ax.set(title="Downloads per country, last quarter", ylabel="downloads")
fig.tight_layout()
fig.savefig("downloads.png")
plt.show()
print(totals)
"""


def _best() -> str:
    totals = _totals()
    return max(totals, key=totals.__getitem__)


SOLVED = Script(
    [LOOK, CANON],
    f"Saved downloads.png: six bars, largest first. {_best()} downloads the app most.",
    [
        "",
        "Countries are written as codes and names, in any case, some with a trailing space: "
        "mapping them to one name each.",
    ],
)
WRONG = Script(
    [LOOK, CASE_ONLY],
    "Saved downloads.png (country names tidied: stripped and title-cased).",
)
