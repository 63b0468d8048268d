"""Join/reshape: revenue per customer segment, joining on ids written two different ways."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from ._common import Script, checker, expect_table, keyed, read_rows, rng, write_csv

CATEGORY = "join/reshape"
TRAP = "orders.csv writes the customer id zero-padded ('00042'), customers.csv as 42"
PROMPT = """
orders.csv (order_id, customer, amount) and customers.csv (customer_id, name, segment) belong
together. Compute the total order amount per customer segment and save it as
segment_revenue.csv with columns segment and revenue.
"""
SEGMENTS = ["consumer", "corporate", "home office"]


def _data() -> tuple[list[tuple[int, str, str]], list[tuple[int, int, float]]]:
    r = rng(707)
    customers = [(i, f"Customer {i}", SEGMENTS[int(r.integers(3))]) for i in range(1, 51)]
    orders = [
        (1000 + n, int(r.integers(1, 51)), round(float(r.uniform(10, 400)), 2)) for n in range(240)
    ]
    return customers, orders


def setup(workdir: Path) -> None:
    customers, orders = _data()
    write_csv(workdir / "customers.csv", ["customer_id", "name", "segment"], customers)
    write_csv(
        workdir / "orders.csv",
        ["order_id", "customer", "amount"],
        [(o, f"{c:05d}", a) for o, c, a in orders],
    )


def _totals() -> dict[str, float]:
    customers, orders = _data()
    segment = {c: s for c, _, s in customers}
    totals: dict[str, float] = defaultdict(float)
    for _, c, amount in orders:
        totals[segment[c]] += amount
    return dict(totals)


@checker
def check(workdir: Path, answer: str) -> str:
    got = keyed(
        read_rows(workdir, "segment_revenue.csv"), "segment", "revenue", "segment_revenue.csv"
    )
    expect_table(got, _totals(), "revenue", rel=1e-4)
    return "revenue per segment matches"


JOIN = """\
import csv
from collections import defaultdict
segment = {r["customer_id"]: r["segment"] for r in csv.DictReader(open("customers.csv"))}
orders = list(csv.DictReader(open("orders.csv")))
totals = defaultdict(float)
for o in orders:
    totals[segment[o["customer"]]] += float(o["amount"])
"""
FIXED = """\
segment = {int(k): v for k, v in segment.items()}
totals = defaultdict(float)
for o in orders:
    totals[segment[int(o["customer"])]] += float(o["amount"])
with open("segment_revenue.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["segment", "revenue"])
    w.writerows(sorted(totals.items()))
print(dict(totals))
"""
SKIPPING = """\
totals = defaultdict(float)
for o in orders:
    if o["customer"] in segment:
        totals[segment[o["customer"]]] += float(o["amount"])
with open("segment_revenue.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["segment", "revenue"])
    w.writerows(sorted(totals.items()))
print(dict(totals))
"""
SOLVED = Script(
    [JOIN, FIXED],
    "Saved segment_revenue.csv with the order amount per segment.",
    ["", "The ids are zero-padded in orders.csv; joining on their integer value."],
)
WRONG = Script([JOIN, SKIPPING], "Saved segment_revenue.csv.")
