"""Plotting: the five largest values as horizontal bars, from numbers with thousands commas."""

from __future__ import annotations

from pathlib import Path

from ._common import Script, answer_has_words, checker, expect_png_bars, rng, write_csv

CATEGORY = "plotting"
TRAP = "population is text with thousands separators ('1,204,551'): sorting it sorts strings"
PROMPT = """
cities.csv lists cities and their population. Plot the five most populous cities as a
horizontal bar chart (largest on top) and save it as top5.png. Which city is the largest?
"""
NAMES = [
    "Aldmoor",
    "Brightwater",
    "Cinderfell",
    "Dunhollow",
    "Eastmarch",
    "Fairhaven",
    "Glenrock",
    "Highgarden",
    "Ironforge",
    "Jadeport",
    "Kingsbridge",
    "Lakeshire",
]


def _rows() -> list[tuple[str, int]]:
    r = rng(1717)
    return [(n, int(r.integers(8_000, 2_500_000))) for n in NAMES]


def setup(workdir: Path) -> None:
    write_csv(workdir / "cities.csv", ["city", "population"], [(c, f"{p:,}") for c, p in _rows()])


@checker
def check(workdir: Path, answer: str) -> str:
    largest = max(_rows(), key=lambda x: x[1])[0]
    answer_has_words(answer, [largest], "the largest city")
    return expect_png_bars(workdir, "top5.png", 5)


READ = """\
import csv
import matplotlib.pyplot as plt
rows = list(csv.DictReader(open("cities.csv")))
top = sorted(rows, key=lambda r: r["population"], reverse=True)[:5]
print([(r["city"], r["population"]) for r in top])
"""
FIXED = """\
top = sorted(rows, key=lambda r: int(r["population"].replace(",", "")), reverse=True)[:5]
fig, ax = plt.subplots(figsize=(7, 4))
ax.barh([r["city"] for r in top][::-1], [int(r["population"].replace(",", "")) for r in top][::-1])
ax.set(title="Five most populous cities", xlabel="population")
fig.savefig("top5.png")
plt.show()
print(top[0]["city"])
"""
WRONG_PLOT = """\
fig, ax = plt.subplots(figsize=(7, 4))
ax.barh([r["city"] for r in rows], [int(r["population"].replace(",", "")) for r in rows])
fig.savefig("top5.png")
plt.show()
"""
_LARGEST = max(_rows(), key=lambda x: x[1])[0]
SOLVED = Script(
    [READ, FIXED],
    f"Saved top5.png; {_LARGEST} is the largest city.",
    ["", "Populations are strings with commas, so that sort was alphabetical; converting."],
)
WRONG = Script([READ, WRONG_PLOT], "Saved top5.png; the largest city is Aldmoor.")
