"""Load/clean: a survey export in Latin-1, not UTF-8."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ._common import Fail, Script, checker, column, read_rows, rng, write_csv

CATEGORY = "load/clean"
TRAP = "the file is Latin-1 encoded: reading it as UTF-8 raises UnicodeDecodeError"
PROMPT = """
survey.csv holds one row per respondent. Count the respondents per city and save the counts as
city_counts.csv with columns city and count, the largest count first. Keep the city names
exactly as they are spelled (accents included).
"""
CITIES = ["São Paulo", "Zürich", "Montréal", "Malmö", "Kraków", "Lyon"]


def _rows() -> list[tuple[int, str, int]]:
    r = rng(202)
    weights = [0.3, 0.22, 0.18, 0.14, 0.1, 0.06]
    return [(i, str(r.choice(CITIES, p=weights)), int(r.integers(1, 6))) for i in range(1, 201)]


def setup(workdir: Path) -> None:
    write_csv(workdir / "survey.csv", ["respondent", "city", "score"], _rows(), encoding="latin-1")


@checker
def check(workdir: Path, answer: str) -> str:
    want = Counter(c for _, c, _ in _rows())
    rows = read_rows(workdir, "city_counts.csv")
    cities, counts = (
        column(rows, "city", "city_counts.csv"),
        column(rows, "count", "city_counts.csv"),
    )
    got = dict(zip(cities, (int(float(c)) for c in counts), strict=True))
    if got != dict(want):
        raise Fail(f"city_counts.csv has {got}, expected {dict(want)}")
    values = [int(float(c)) for c in counts]
    if values != sorted(values, reverse=True):
        raise Fail("city_counts.csv is not sorted by count, largest first")
    return f"{len(want)} cities counted, accents intact"


COUNT = """\
import csv
from collections import Counter
with open("survey.csv") as f:
    counts = Counter(row["city"] for row in csv.DictReader(f))
"""
FIXED = """\
with open("survey.csv", encoding="latin-1") as f:
    counts = Counter(row["city"] for row in csv.DictReader(f))
with open("city_counts.csv", "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(["city", "count"])
    writer.writerows(counts.most_common())
print(counts.most_common())
"""
LOSSY = """\
with open("survey.csv", encoding="utf-8", errors="replace") as f:
    counts = Counter(row["city"] for row in csv.DictReader(f))
with open("city_counts.csv", "w", newline="", encoding="utf-8") as f:
    writer = csv.writer(f)
    writer.writerow(["city", "count"])
    writer.writerows(counts.most_common())
print(counts.most_common())
"""
SOLVED = Script(
    [COUNT, FIXED],
    "Saved city_counts.csv; São Paulo has the most respondents.",
    ["", "The file is not UTF-8; it decodes as Latin-1."],
)
WRONG = Script([COUNT, LOSSY], "Saved city_counts.csv (undecodable characters replaced).")
