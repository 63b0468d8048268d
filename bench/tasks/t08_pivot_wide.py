"""Join/reshape: long measurements to one row per site."""

from __future__ import annotations

from pathlib import Path

from ._common import Fail, Script, as_float, checker, read_rows, rng, write_csv

CATEGORY = "join/reshape"
TRAP = ""
PROMPT = """
measurements.csv is in long form (site, metric, value) with metrics temp, humidity and wind.
Reshape it to one row per site, sorted by site, with columns site, temp, humidity, wind, and
save it as wide.csv.
"""
METRICS = ["temp", "humidity", "wind"]


def _data() -> dict[str, dict[str, float]]:
    r = rng(808)
    sites = [f"site-{c}" for c in "QWERTYUIOP"]
    return {
        s: {
            "temp": round(float(r.normal(15, 6)), 1),
            "humidity": round(float(r.uniform(20, 95)), 1),
            "wind": round(float(r.gamma(2, 3)), 1),
        }
        for s in sites
    }


def setup(workdir: Path) -> None:
    r = rng(809)
    rows = [(s, m, v) for s, metrics in _data().items() for m, v in metrics.items()]
    write_csv(
        workdir / "measurements.csv",
        ["site", "metric", "value"],
        [rows[i] for i in r.permutation(len(rows))],
    )


@checker
def check(workdir: Path, answer: str) -> str:
    want = _data()
    rows = read_rows(workdir, "wide.csv")
    if not rows or list(rows[0]) != ["site", *METRICS]:
        raise Fail(
            f"wide.csv columns are {list(rows[0]) if rows else []}, expected {['site', *METRICS]}"
        )
    sites = [r["site"] for r in rows]
    if sites != sorted(want):
        raise Fail(f"wide.csv rows are {sites}, expected {sorted(want)}")
    for row in rows:
        for m in METRICS:
            if abs(as_float(row[m], "wide.csv") - want[row["site"]][m]) > 1e-6:
                raise Fail(
                    f"wide.csv {row['site']} {m} is {row[m]}, expected {want[row['site']][m]}"
                )
    return "10 sites x 3 metrics in place"


PIVOT = """\
import csv
wide = {}
for r in csv.DictReader(open("measurements.csv")):
    wide.setdefault(r["site"], {})[r["metric"]] = r["value"]
with open("wide.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["site", "temp", "humidity", "wind"])
    for site in sorted(wide):
        w.writerow([site] + [wide[site][m] for m in ("temp", "humidity", "wind")])
print(len(wide), "sites")
"""
SWAPPED = PIVOT.replace(
    'for m in ("temp", "humidity", "wind")', 'for m in ("temp", "wind", "humidity")'
)
SOLVED = Script([PIVOT], "Saved wide.csv: one row per site with temp, humidity and wind.")
WRONG = Script([SWAPPED], "Saved wide.csv.")
