"""Statistics: a two-proportion z-test on an A/B experiment."""

from __future__ import annotations

import math
from pathlib import Path

from ._common import Script, answer_has_number, checker, rng, write_csv

CATEGORY = "statistics"
TRAP = ""
PROMPT = """
experiment.csv has one row per visitor: variant (A or B) and converted (0 or 1). Compute the
conversion rate of each variant and a two-sided two-proportion z-test (pooled standard error).
Tell me both rates, the z statistic and the p-value.
"""


def _rows() -> list[tuple[int, str, int]]:
    r = rng(1313)
    rows = []
    for i in range(4000):
        variant = "A" if r.random() < 0.5 else "B"
        rate = 0.10 if variant == "A" else 0.12
        rows.append((i, variant, int(r.random() < rate)))
    return rows


def _stats() -> tuple[float, float, float, float]:
    rows = _rows()
    n = {v: sum(1 for _, x, _ in rows if x == v) for v in "AB"}
    c = {v: sum(y for _, x, y in rows if x == v) for v in "AB"}
    pa, pb = c["A"] / n["A"], c["B"] / n["B"]
    pooled = (c["A"] + c["B"]) / (n["A"] + n["B"])
    se = math.sqrt(pooled * (1 - pooled) * (1 / n["A"] + 1 / n["B"]))
    z = (pb - pa) / se
    return pa, pb, z, math.erfc(abs(z) / math.sqrt(2))


def setup(workdir: Path) -> None:
    write_csv(workdir / "experiment.csv", ["visitor", "variant", "converted"], _rows())


@checker
def check(workdir: Path, answer: str) -> str:
    _, _, z, p = _stats()
    answer_has_number(answer, abs(z), "the z statistic", rel=0.01)
    answer_has_number(answer, p, "the p-value", rel=0.05, tol=2e-4)
    return f"z = {z:.3f}, p = {p:.4f}"


TEST = """\
import csv, math
rows = list(csv.DictReader(open("experiment.csv")))
n = {v: sum(r["variant"] == v for r in rows) for v in "AB"}
c = {v: sum(int(r["converted"]) for r in rows if r["variant"] == v) for v in "AB"}
pa, pb = c["A"] / n["A"], c["B"] / n["B"]
pooled = (c["A"] + c["B"]) / (n["A"] + n["B"])
se = math.sqrt(pooled * (1 - pooled) * (1 / n["A"] + 1 / n["B"]))
z = (pb - pa) / se
p = math.erfc(abs(z) / math.sqrt(2))
print(f"A {pa:.4f}  B {pb:.4f}  z {z:.4f}  p {p:.5f}")
"""
_PA, _PB, _Z, _P = _stats()
SOLVED = Script(
    [TEST],
    f"Conversion: A {_PA:.2%}, B {_PB:.2%}. z = {_Z:.3f}, two-sided p = {_P:.4f}.",
)
WRONG = Script(
    [TEST.replace("math.erfc(abs(z) / math.sqrt(2))", "math.erfc(abs(z) / math.sqrt(2)) / 2")],
    f"Conversion: A {_PA:.2%}, B {_PB:.2%}. z = {_Z:.3f}, p = {_P / 2:.4f}.",
)
