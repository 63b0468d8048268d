"""File search: errors per service across a log folder where older logs are gzipped."""

from __future__ import annotations

import datetime as dt
import gzip
from collections import Counter
from pathlib import Path

from ._common import Script, checker, expect_table, keyed, read_rows, rng

CATEGORY = "file search"
TRAP = "the two oldest logs are .log.gz: reading them as text fails, skipping them undercounts"
PROMPT = """
logs/ holds a week of application logs, one file per day. Count the ERROR lines per service
over the whole week and save error_counts.csv with columns service and errors.
"""
SERVICES = ["api", "worker", "scheduler", "db"]
START = dt.date(2024, 4, 1)


def _days() -> list[tuple[str, list[str]]]:
    r = rng(2222)
    days = []
    for d in range(7):
        day = START + dt.timedelta(days=d)
        lines = []
        for _ in range(int(r.integers(150, 250))):
            level = str(r.choice(["INFO", "DEBUG", "WARNING", "ERROR"], p=[0.5, 0.25, 0.15, 0.1]))
            service = SERVICES[int(r.integers(4))]
            lines.append(f"{day}T{int(r.integers(24)):02d}:00:00 {level} {service} request done")
        days.append((day.isoformat(), lines))
    return days


def setup(workdir: Path) -> None:
    logs = workdir / "logs"
    logs.mkdir()
    for i, (day, lines) in enumerate(_days()):
        text = "\n".join(lines) + "\n"
        if i < 2:
            (logs / f"app-{day}.log.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
        else:
            (logs / f"app-{day}.log").write_text(text)


@checker
def check(workdir: Path, answer: str) -> str:
    want: Counter[str] = Counter()
    for _, lines in _days():
        want.update(line.split()[2] for line in lines if line.split()[1] == "ERROR")
    got = keyed(read_rows(workdir, "error_counts.csv"), "service", "errors", "error_counts.csv")
    expect_table(got, {k: float(v) for k, v in want.items()}, "errors")
    return "errors per service over all 7 days"


NAIVE = """\
from collections import Counter
from pathlib import Path
errors = Counter()
for path in sorted(Path("logs").iterdir()):
    for line in path.read_text().splitlines():
        parts = line.split()
        if parts[1] == "ERROR":
            errors[parts[2]] += 1
"""
FIXED = """\
import csv, gzip
errors = Counter()
for path in sorted(Path("logs").iterdir()):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        for line in f:
            parts = line.split()
            if len(parts) > 2 and parts[1] == "ERROR":
                errors[parts[2]] += 1
with open("error_counts.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["service", "errors"])
    w.writerows(sorted(errors.items()))
print(errors)
"""
SKIP_GZ = """\
import csv
errors = Counter()
for path in sorted(Path("logs").glob("*.log")):
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[1] == "ERROR":
            errors[parts[2]] += 1
with open("error_counts.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["service", "errors"])
    w.writerows(sorted(errors.items()))
print(errors)
"""
SOLVED = Script(
    [NAIVE, FIXED],
    "Saved error_counts.csv with the week's ERROR lines per service (two logs were gzipped).",
    ["", "Two of the logs are gzip-compressed; opening those with gzip."],
)
WRONG = Script([NAIVE, SKIP_GZ], "Saved error_counts.csv (the .log files).")
