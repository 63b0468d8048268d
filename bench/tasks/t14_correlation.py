"""Statistics: the most correlated pair of columns, with missing values marked 'NA'."""

from __future__ import annotations

from itertools import combinations
from pathlib import Path

import numpy as np

from ._common import Fail, Script, checker, numbers_in, rng, write_csv

CATEGORY = "statistics"
TRAP = ""
PROMPT = """
metrics.csv has five numeric columns (some cells are NA). Which two columns are the most
strongly correlated (largest absolute Pearson correlation, using the rows where both are
present)? Name the two columns and give the correlation.
"""
COLUMNS = ["visits", "signups", "spend", "latency", "errors"]


def _data() -> np.ndarray:
    r = rng(1414)
    n = 300
    visits = r.normal(1000, 150, n)
    latency = r.normal(200, 30, n)
    data = np.column_stack(
        [
            visits,
            0.05 * visits + r.normal(0, 9, n),
            r.normal(50, 10, n),
            latency,
            -0.08 * latency + r.normal(0, 1.5, n),
        ]
    )
    data[r.random(data.shape) < 0.05] = np.nan
    return np.round(data, 3)


def _best() -> tuple[str, str, float]:
    d = _data()
    best = ("", "", 0.0)
    for i, j in combinations(range(5), 2):
        ok = ~np.isnan(d[:, i]) & ~np.isnan(d[:, j])
        r = float(np.corrcoef(d[ok, i], d[ok, j])[0, 1])
        if abs(r) > abs(best[2]):
            best = (COLUMNS[i], COLUMNS[j], r)
    return best


def setup(workdir: Path) -> None:
    rows = [["NA" if np.isnan(v) else v for v in row] for row in _data()]
    write_csv(workdir / "metrics.csv", COLUMNS, rows)


@checker
def check(workdir: Path, answer: str) -> str:
    a, b, r = _best()
    low = answer.lower()
    named = [c for c in COLUMNS if c in low]
    if sorted(named) != sorted([a, b]):
        raise Fail(f"the answer names {named}, expected {a} and {b}")
    if not any(abs(abs(n) - abs(r)) < 0.01 for n in numbers_in(answer)):
        raise Fail(f"the answer does not state the correlation ({r:.3f})")
    return f"{a} ~ {b}: r = {r:.3f}"


CORR = """\
import numpy as np
data = np.genfromtxt("metrics.csv", delimiter=",", names=True, missing_values="NA")
cols = data.dtype.names
best = None
for i, a in enumerate(cols):
    for b in cols[i + 1:]:
        ok = ~np.isnan(data[a]) & ~np.isnan(data[b])
        r = np.corrcoef(data[a][ok], data[b][ok])[0, 1]
        if best is None or abs(r) > abs(best[2]):
            best = (a, b, r)
print(best)
"""
_A, _B, _R = _best()
SOLVED = Script([CORR], f"{_A} and {_B} are the most strongly correlated: r = {_R:.3f}.")
WRONG = Script(
    [CORR.replace("abs(r) > abs(best[2])", "r > best[2]")],
    "visits and signups are the most strongly correlated (r = 0.52).",
)
