"""Plotting: one figure with two panels side by side, read back from the saved PNG."""

from __future__ import annotations

from pathlib import Path

from ._common import Fail, Script, checker, png_axes, read_png, rng, write_csv

CATEGORY = "plotting"
TRAP = ""
PROMPT = """
latency.csv has request latencies (timestamp, ms). Make one figure with two panels side by
side: on the left a histogram of the latencies, on the right the latency over time. Save it
as panels.png.
"""


def setup(workdir: Path) -> None:
    r = rng(1616)
    rows = [
        (f"2024-06-01T{h:02d}:{m:02d}:00", round(float(r.lognormal(4, 0.4)), 1))
        for h in range(24)
        for m in range(0, 60, 5)
    ]
    write_csv(workdir / "latency.csv", ["timestamp", "ms"], rows)


@checker
def check(workdir: Path, answer: str) -> str:
    axes = png_axes(read_png(workdir, "panels.png"))
    if axes != 2:
        raise Fail(f"panels.png shows {axes} panels, expected 2")
    return "panels.png has two panels"


PLOT = """\
import csv
import matplotlib.pyplot as plt
ms = [float(r["ms"]) for r in csv.DictReader(open("latency.csv"))]
fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
left.hist(ms, bins=30)
left.set(title="Latency distribution", xlabel="ms")
right.plot(ms)
right.set(title="Latency over time", ylabel="ms")
fig.savefig("panels.png")
plt.show()
"""
ONE = """\
import csv
import matplotlib.pyplot as plt
ms = [float(r["ms"]) for r in csv.DictReader(open("latency.csv"))]
fig, ax = plt.subplots(figsize=(10, 4))
ax.hist(ms, bins=30, alpha=0.5)
ax.plot(ms)
fig.savefig("panels.png")
plt.show()
"""
SOLVED = Script([PLOT], "Saved panels.png: histogram on the left, latency over time on the right.")
WRONG = Script([ONE], "Saved panels.png.")
