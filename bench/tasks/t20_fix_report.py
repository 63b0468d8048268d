"""Debugging: a reporting script that crashes, and two quieter bugs behind the crash."""

from __future__ import annotations

import json
from pathlib import Path

from ._common import Fail, Script, checker, read_bytes, rng, write_csv

CATEGORY = "debugging"
TRAP = "the script crashes on text amounts; after that fix it still miscounts silently"
PROMPT = """
report.py should summarise orders.csv into report.json: the number of orders, the total and
mean amount, the total refunded amount (status "refunded") and the number of orders per
status. It crashes, and its numbers may be wrong too. Fix report.py (keep its output format)
and run it so that report.json is correct.
"""
SCRIPT = '''\
"""Summarise orders.csv into report.json."""
import csv
import json


def load(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def summarise(rows):
    amounts = [r["amount"] for r in rows]
    total = sum(amounts)
    by_status = {}
    for i in range(1, len(rows)):
        status = rows[i]["status"]
        by_status[status] = by_status.get(status, 0) + 1
    refunded = sum(float(r["amount"]) for r in rows if r["status"] == "refund")
    return {
        "orders": len(rows),
        "total": round(total, 2),
        "mean": round(total / len(rows), 2),
        "refunded": round(refunded, 2),
        "by_status": by_status,
    }


if __name__ == "__main__":
    with open("report.json", "w") as f:
        json.dump(summarise(load("orders.csv")), f, indent=2)
'''
STATUSES = ["paid", "shipped", "refunded", "cancelled"]


def _rows() -> list[tuple[int, str, float]]:
    r = rng(2020)
    return [
        (
            i,
            STATUSES[int(r.choice(4, p=[0.4, 0.35, 0.15, 0.1]))],
            round(float(r.uniform(5, 300)), 2),
        )
        for i in range(1, 121)
    ]


def setup(workdir: Path) -> None:
    rows = _rows()
    rows[0] = (1, "cancelled", rows[0][2])  # the row the loop skips is the only one of its kind
    rows = [(i, s if s != "cancelled" or i == 1 else "paid", a) for i, s, a in rows]
    write_csv(workdir / "orders.csv", ["order_id", "status", "amount"], rows)
    (workdir / "report.py").write_text(SCRIPT)


def _want() -> dict:
    rows = _rows()
    rows[0] = (1, "cancelled", rows[0][2])
    rows = [(i, s if s != "cancelled" or i == 1 else "paid", a) for i, s, a in rows]
    total = sum(a for _, _, a in rows)
    by_status: dict[str, int] = {}
    for _, s, _ in rows:
        by_status[s] = by_status.get(s, 0) + 1
    refunded = sum(a for _, s, a in rows if s == "refunded")
    return {
        "orders": len(rows),
        "total": round(total, 2),
        "mean": round(total / len(rows), 2),
        "refunded": round(refunded, 2),
        "by_status": by_status,
    }


@checker
def check(workdir: Path, answer: str) -> str:
    if read_bytes(workdir, "report.py").decode(errors="replace") == SCRIPT:
        raise Fail("report.py was not changed")
    try:
        got = json.loads(read_bytes(workdir, "report.json"))
    except ValueError:
        raise Fail("report.json is not JSON") from None
    want = _want()
    for key, value in want.items():
        if key == "by_status":
            if got.get(key) != value:
                raise Fail(f"report.json by_status is {got.get(key)}, expected {value}")
        elif not isinstance(got.get(key), (int, float)) or abs(got[key] - value) > 0.011:
            raise Fail(f"report.json {key} is {got.get(key)!r}, expected {value}")
    return "report.json is right"


RUN = "%run report.py"
CRASH_FIX = """\
src = open("report.py").read()
src = src.replace('[r["amount"] for r in rows]', '[float(r["amount"]) for r in rows]')
open("report.py", "w").write(src)
%run report.py
print(open("report.json").read())
"""
ALL_FIXES = """\
src = open("report.py").read()
src = src.replace("for i in range(1, len(rows)):", "for i in range(len(rows)):")
src = src.replace('r["status"] == "refund"', 'r["status"] == "refunded"')
open("report.py", "w").write(src)
%run report.py
print(open("report.json").read())
"""
SOLVED = Script(
    [RUN, CRASH_FIX, ALL_FIXES],
    "Fixed report.py: amounts are converted to numbers, the status count no longer skips the "
    "first order, and refunds match the status 'refunded'. report.json is written.",
    [
        "",
        "Amounts are strings; converting them.",
        "It runs now, but refunded is 0 and one order is missing from by_status: two more bugs.",
    ],
)
WRONG = Script([RUN, CRASH_FIX], "Fixed the crash in report.py; report.json is written.")
