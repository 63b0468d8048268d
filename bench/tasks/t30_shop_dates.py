"""Time series (hard): sales merged from three shops, each writing dates its own way
(month-first in Boston, day-first in London, ISO online), in one column."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path

from ._common import (
    Script,
    answer_has_words,
    checker,
    expect_table,
    keyed,
    read_rows,
    rng,
    write_csv,
)

CATEGORY = "time series"
TIER = "hard"
TRAP = "London writes 03/04/2024 for 3 April, Boston for 4 March: the order differs per shop"
MAX_STEPS = 25
PROMPT = """
sales.csv merges the sales of our three shops for 2024 (shop, date, amount). What was the
company's revenue per month? Save monthly_revenue.csv with columns month (YYYY-MM) and
revenue, and tell me the best month.
"""
SHOPS = {"Boston": "%m/%d/%Y", "London": "%d/%m/%Y", "Online": "%Y-%m-%d"}
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]  # fmt: skip


def _sales() -> list[tuple[str, dt.date, float]]:
    r = rng(3030)
    rows = []
    for shop, scale in (("Boston", 1.0), ("London", 2.2), ("Online", 0.8)):
        for _ in range(700):
            day = dt.date(2024, 1, 1) + dt.timedelta(days=int(r.integers(0, 366)))
            # London's trade is strongest early in each month (payday sales in the first week).
            if shop == "London" and r.random() < 0.5:
                day = day.replace(day=int(r.integers(1, 13)))
            rows.append((shop, day, round(float(r.gamma(2, 40 * scale)), 2)))
    r.shuffle(rows)
    return rows


def setup(workdir: Path) -> None:
    rows = [(shop, day.strftime(SHOPS[shop]), amount) for shop, day, amount in _sales()]
    write_csv(workdir / "sales.csv", ["shop", "date", "amount"], rows)


def _monthly() -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for _, day, amount in _sales():
        totals[f"{day:%Y-%m}"] += amount
    return {m: round(v, 2) for m, v in totals.items()}


def _best() -> str:
    totals = _monthly()
    return MONTHS[int(max(totals, key=totals.__getitem__)[5:]) - 1]


@checker
def check(workdir: Path, answer: str) -> str:
    got = keyed(
        read_rows(workdir, "monthly_revenue.csv"), "month", "revenue", "monthly_revenue.csv"
    )
    got = {k[:7]: v for k, v in got.items()}
    expect_table(got, _monthly(), "monthly_revenue.csv revenue", rel=1e-4)
    best = _best()
    if f"2024-{MONTHS.index(best) + 1:02d}" not in answer:
        answer_has_words(answer, [best], "the best month")
    return f"monthly revenue right; {best} was the best month"


NAIVE = """\
import pandas as pd

sales = pd.read_csv("sales.csv")
sales["date"] = pd.to_datetime(sales["date"], format="mixed")
monthly = sales.groupby(sales["date"].dt.strftime("%Y-%m"))["amount"].sum().round(2)
monthly.rename("revenue").rename_axis("month").reset_index().to_csv(
    "monthly_revenue.csv", index=False
)
print(monthly)
print("best month:", monthly.idxmax())
"""
FIRST = """\
import pandas as pd
sales = pd.read_csv("sales.csv")
sales["date"] = pd.to_datetime(sales["date"])
"""
LOOK = """\
print(sales.groupby("shop")["date"].apply(lambda d: d.head(4).tolist()))
slashed = sales[sales["date"].str.contains("/")]
parts = slashed["date"].str.split("/", expand=True).astype(int)
print(parts.groupby(slashed["shop"]).max())
"""
PARSE = """\
formats = {"Boston": "%m/%d/%Y", "London": "%d/%m/%Y", "Online": "%Y-%m-%d"}
sales["day"] = pd.concat(
    [pd.to_datetime(g["date"], format=formats[shop]) for shop, g in sales.groupby("shop")]
)
print(sales.groupby("shop")["day"].agg(["min", "max", "count"]))
monthly = sales.groupby(sales["day"].dt.strftime("%Y-%m"))["amount"].sum().round(2)
monthly.rename("revenue").rename_axis("month").reset_index().to_csv(
    "monthly_revenue.csv", index=False
)
print(monthly)
print("best month:", monthly.idxmax())
"""
DAYFIRST = """\
sales["day"] = pd.to_datetime(sales["date"], format="mixed", dayfirst=True)
monthly = sales.groupby(sales["day"].dt.strftime("%Y-%m"))["amount"].sum().round(2)
monthly.rename("revenue").rename_axis("month").reset_index().to_csv(
    "monthly_revenue.csv", index=False
)
print(monthly)
"""
SOLVED = Script(
    [FIRST, LOOK, PARSE],
    f"Saved monthly_revenue.csv (each shop's dates parsed in its own format). The best month "
    f"was {_best()}.",
    [
        "",
        "Mixed formats. Which part is the day, shop by shop? A part above 12 must be the day.",
        "Boston writes month/day, London day/month, Online ISO: parsing each with its format.",
    ],
)
WRONG = Script(
    [FIRST, LOOK, DAYFIRST],
    "Saved monthly_revenue.csv (dates read day-first, as the London rows show). The best "
    "month is at the top of the output.",
)
