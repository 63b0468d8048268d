"""Aggregate: daily active users from a JSON event log with a few corrupt lines."""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from pathlib import Path

from ._common import Script, checker, expect_table, keyed, read_rows, rng

CATEGORY = "aggregate"
TRAP = "a few log lines are truncated JSON: json.loads on every line raises JSONDecodeError"
PROMPT = """
events.log is a JSON-lines application log (fields ts, user, event). Count the distinct users
per day (UTC date of ts) and save it as dau.csv with columns date (YYYY-MM-DD) and users.
Skip lines that are not valid JSON.
"""
START = dt.datetime(2024, 3, 1, tzinfo=dt.timezone.utc)


def _events() -> list[dict]:
    r = rng(606)
    events = []
    for _ in range(900):
        ts = START + dt.timedelta(seconds=int(r.integers(0, 10 * 86400)))
        user = f"u{int(r.integers(1, 70))}"
        kind = str(r.choice(["login", "view", "click", "logout"]))
        events.append({"ts": ts.isoformat().replace("+00:00", "Z"), "user": user, "event": kind})
    return sorted(events, key=lambda e: e["ts"])


def setup(workdir: Path) -> None:
    lines = [json.dumps(e) for e in _events()]
    for i in range(40, len(lines), 150):
        lines[i] = lines[i][: len(lines[i]) // 2]  # a writer killed mid-line
    (workdir / "events.log").write_text("\n".join(lines) + "\n")


def _dau() -> dict[str, float]:
    users: dict[str, set[str]] = defaultdict(set)
    for i, e in enumerate(_events()):
        if i >= 40 and (i - 40) % 150 == 0:
            continue
        users[e["ts"][:10]].add(e["user"])
    return {day: float(len(u)) for day, u in users.items()}


@checker
def check(workdir: Path, answer: str) -> str:
    got = keyed(read_rows(workdir, "dau.csv"), "date", "users", "dau.csv")
    expect_table(got, _dau(), "users")
    return f"{len(got)} days of active users match"


NAIVE = """\
import json
from collections import defaultdict
events = [json.loads(line) for line in open("events.log")]
"""
TOLERANT = """\
users = defaultdict(set)
bad = 0
for line in open("events.log"):
    try:
        e = json.loads(line)
    except json.JSONDecodeError:
        bad += 1
        continue
    users[e["ts"][:10]].add(e["user"])
import csv
with open("dau.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["date", "users"])
    w.writerows((day, len(u)) for day, u in sorted(users.items()))
print(bad, "bad lines;", {d: len(u) for d, u in sorted(users.items())})
"""
SOLVED = Script(
    [NAIVE, TOLERANT],
    "Saved dau.csv: distinct users per day over the 10 days (6 corrupt lines skipped).",
    ["", "Some lines are cut off; skipping the ones that do not parse."],
)
EVENTS_NOT_USERS = TOLERANT.replace('.add(e["user"])', '.add(e["event"])')
WRONG = Script([NAIVE, EVENTS_NOT_USERS], "Saved dau.csv.")
