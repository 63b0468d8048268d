"""Aggregate (hard): an order export in which a re-import copied three weeks of orders under
new ids: every other field is the same, so ``drop_duplicates()`` keeps them all."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path

from ._common import Fail, Script, as_float, checker, read_rows, rng, write_csv

CATEGORY = "aggregate"
TIER = "hard"
TRAP = "orders of 10-31 March appear twice, the copies under new ids: found only by looking"
MAX_STEPS = 25
PROMPT = """
orders.csv is our shop's order export for the first half of 2024 (one row per order). How many
orders did we get each month, and what revenue? Save monthly_orders.csv with columns month
(YYYY-MM), orders, revenue.
"""
COPIED = (dt.date(2024, 3, 10), dt.date(2024, 3, 31))
SKUS = {"TEA-01": 6.5, "TEA-02": 9.0, "MUG-01": 12.0, "POT-01": 34.0, "SET-01": 55.0}


def _orders() -> list[tuple[int, dt.datetime, str, str, int, float]]:
    r = rng(3131)
    start = dt.datetime(2024, 1, 1)
    seconds = sorted(r.choice(182 * 86400, size=1600, replace=False).tolist())
    rows = []
    for n, sec in enumerate(seconds):
        sku = str(r.choice(list(SKUS)))
        qty = int(r.integers(1, 5))
        customer = f"C{int(r.integers(1000, 1400))}"
        when = start + dt.timedelta(seconds=int(sec))
        rows.append((100001 + n, when, customer, sku, qty, round(SKUS[sku] * qty, 2)))
    return rows


def setup(workdir: Path) -> None:
    rows = _orders()
    copies = [row for row in rows if COPIED[0] <= row[1].date() <= COPIED[1]]
    rows += [(900001 + n, *row[1:]) for n, row in enumerate(copies)]
    rows.sort(key=lambda row: (row[1], row[0]))
    write_csv(
        workdir / "orders.csv",
        ["order_id", "created_at", "customer_id", "sku", "qty", "amount"],
        [(i, when.isoformat(sep=" "), c, s, q, a) for i, when, c, s, q, a in rows],
    )


def _monthly() -> dict[str, tuple[int, float]]:
    counts: dict[str, int] = defaultdict(int)
    revenue: dict[str, float] = defaultdict(float)
    for _, when, _, _, _, amount in _orders():
        counts[f"{when:%Y-%m}"] += 1
        revenue[f"{when:%Y-%m}"] += amount
    return {m: (counts[m], round(revenue[m], 2)) for m in counts}


@checker
def check(workdir: Path, answer: str) -> str:
    want = _monthly()
    got = {}
    for row in read_rows(workdir, "monthly_orders.csv"):
        if not {"month", "orders", "revenue"} <= set(row):
            raise Fail(f"monthly_orders.csv needs columns month, orders, revenue ({sorted(row)})")
        got[row["month"][:7]] = (
            as_float(row["orders"], "monthly_orders.csv orders"),
            as_float(row["revenue"], "monthly_orders.csv revenue"),
        )
    if set(got) != set(want):
        raise Fail(f"monthly_orders.csv has months {sorted(got)}, expected {sorted(want)}")
    for month, (orders, revenue) in sorted(want.items()):
        if got[month][0] != orders or abs(got[month][1] - revenue) > 0.011:
            raise Fail(
                f"monthly_orders.csv {month}: {got[month][0]:g} orders, revenue "
                f"{got[month][1]:g}; expected {orders}, {revenue:g}"
            )
    return f"monthly orders and revenue right ({sum(o for o, _ in want.values())} orders)"


NAIVE = """\
import pandas as pd

orders = pd.read_csv("orders.csv", parse_dates=["created_at"])
orders = orders.drop_duplicates()
monthly = orders.groupby(orders["created_at"].dt.strftime("%Y-%m")).agg(
    orders=("order_id", "nunique"), revenue=("amount", "sum")
).round(2)
monthly.rename_axis("month").reset_index().to_csv("monthly_orders.csv", index=False)
print(monthly)
"""
FIRST = """\
import pandas as pd
orders = pd.read_csv("orders.csv", parse_dates=["created_at"])
print(len(orders), "rows;", orders["order_id"].is_unique, "unique ids;",
      len(orders.drop_duplicates()), "distinct rows")
orders.groupby(orders["created_at"].dt.strftime("%Y-%m")).size()
"""
LOOK = """\
fields = ["created_at", "customer_id", "sku", "qty", "amount"]
twins = orders[orders.duplicated(fields, keep=False)]
print(len(twins), "rows share every field but the id with another row")
print(twins.head(6).to_string())
print(twins.groupby(twins["order_id"] > 900000)["created_at"].agg(["min", "max", "count"]))
"""
DEDUPE = """\
real = orders.sort_values("order_id").drop_duplicates(fields, keep="first")
print(len(orders) - len(real), "copies dropped;", (real["order_id"] > 900000).sum(), "left")
monthly = real.groupby(real["created_at"].dt.strftime("%Y-%m")).agg(
    orders=("order_id", "size"), revenue=("amount", "sum")
).round(2)
monthly.rename_axis("month").reset_index().to_csv("monthly_orders.csv", index=False)
print(monthly)
"""
BY_CUSTOMER = """\
real = orders.drop_duplicates(["customer_id", "sku"])
monthly = real.groupby(real["created_at"].dt.strftime("%Y-%m")).agg(
    orders=("order_id", "size"), revenue=("amount", "sum")
).round(2)
monthly.rename_axis("month").reset_index().to_csv("monthly_orders.csv", index=False)
print(monthly)
"""
SOLVED = Script(
    [FIRST, LOOK, DEDUPE],
    "Saved monthly_orders.csv. The orders of 10-31 March had been imported twice (the copies "
    "carry ids from 900001); I counted each order once.",
    [
        "",
        "March has far more orders than the other months, and no row is an exact duplicate. "
        "Checking for rows equal in everything but the id.",
        "Every March 10-31 order has a twin with an id above 900000: a second import.",
    ],
)
WRONG = Script(
    [FIRST, BY_CUSTOMER],
    "Saved monthly_orders.csv, with repeated customer/product orders counted once.",
)
