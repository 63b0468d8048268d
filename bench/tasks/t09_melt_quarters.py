"""Join/reshape: a wide quarterly table to long form, plus the best quarter."""

from __future__ import annotations

from pathlib import Path

from ._common import Fail, Script, answer_has_words, as_float, checker, read_rows, rng, write_csv

CATEGORY = "join/reshape"
TRAP = ""
PROMPT = """
quarterly.csv has one row per product and a column per quarter (Q1..Q4). Turn it into long
form with columns product, quarter, sales (one row per product and quarter) and save it as
long.csv. Which quarter had the highest total sales over all products?
"""
QUARTERS = ["Q1", "Q2", "Q3", "Q4"]


def _data() -> dict[str, list[int]]:
    r = rng(909)
    products = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]
    lift = [1.0, 0.9, 1.25, 1.05]
    return {p: [int(r.integers(200, 900) * lift[q]) for q in range(4)] for p in products}


def _best() -> str:
    totals = [sum(v[q] for v in _data().values()) for q in range(4)]
    return QUARTERS[totals.index(max(totals))]


def setup(workdir: Path) -> None:
    write_csv(
        workdir / "quarterly.csv", ["product", *QUARTERS], [(p, *v) for p, v in _data().items()]
    )


@checker
def check(workdir: Path, answer: str) -> str:
    want = {(p, QUARTERS[q]): v[q] for p, v in _data().items() for q in range(4)}
    rows = read_rows(workdir, "long.csv")
    try:
        got = {(r["product"], r["quarter"]): as_float(r["sales"], "long.csv") for r in rows}
    except KeyError as exc:
        raise Fail(f"long.csv has no column {exc}") from None
    if len(rows) != len(want) or got != want:
        raise Fail(f"long.csv has {len(rows)} rows that do not match the {len(want)} expected")
    others = [q for q in QUARTERS if q != _best()]
    answer_has_words(answer, [_best()], "the best quarter")
    if any(q in answer for q in others):
        raise Fail(f"the answer names other quarters besides {_best()}")
    return f"28 long rows; best quarter {_best()}"


MELT = """\
import csv
from collections import Counter
rows = list(csv.DictReader(open("quarterly.csv")))
totals = Counter()
with open("long.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["product", "quarter", "sales"])
    for r in rows:
        for q in ("Q1", "Q2", "Q3", "Q4"):
            w.writerow([r["product"], q, r[q]])
            totals[q] += int(r[q])
print(totals.most_common())
"""
SOLVED = Script([MELT], f"Saved long.csv (28 rows). {_best()} had the highest total sales.")
WRONG = Script(
    [MELT.replace('r["product"], q, r[q]', 'r["product"], q, r["Q1"]')],
    "Saved long.csv. Q1 had the highest total sales.",
)
