"""Load/clean (hard): a bank's export with a preamble above the header, ``;`` separators,
European number format (``1.234,56``) and balance lines at the foot."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from pathlib import Path

from ._common import Fail, Script, answer_has_number, as_float, checker, read_rows, rng

CATEGORY = "load/clean"
TIER = "hard"
TRAP = "a preamble, ';' separators, '1.234,56' amounts and footer lines: seen only by looking"
MAX_STEPS = 25
PROMPT = """
statement.csv is my bank account's export for the first quarter of 2024. For each month, how
much money came in and how much went out (both as positive amounts)? Save monthly.csv with
columns month (YYYY-MM), income, spending, and tell me the net change over the quarter.
"""
PAYEES = ["Supermarket", "Rent", "Salary ACME GmbH", "Pharmacy", "Train ticket", "Cafe", "Refund"]


def _transactions() -> list[tuple[dt.date, str, float]]:
    r = rng(2525)
    rows = []
    for month in (1, 2, 3):
        rows.append((dt.date(2024, month, 1), "Rent", -1450.0))
        rows.append((dt.date(2024, month, 27), "Salary ACME GmbH", 3875.4))
        for _ in range(int(r.integers(22, 30))):
            day = dt.date(2024, month, int(r.integers(1, 29)))
            payee = str(r.choice(["Supermarket", "Pharmacy", "Train ticket", "Cafe"]))
            rows.append((day, payee, -round(float(r.gamma(2, 25 if payee != "Cafe" else 3)), 2)))
        if r.random() < 0.8:
            rows.append((dt.date(2024, month, 15), "Refund", round(float(r.uniform(20, 1300)), 2)))
    return sorted(rows, key=lambda row: row[0])


def _eu(x: float) -> str:
    """1234.5 -> '1.234,50', as the bank writes it."""
    return f"{x:,.2f}".replace(",", "_").replace(".", ",").replace("_", ".")


def setup(workdir: Path) -> None:
    opening = 2210.0
    lines = [
        "Account statement",
        "IBAN;DE12 5001 0517 0648 4898 90",
        "Period;01.01.2024 - 31.03.2024",
        "Currency;EUR",
        "",
        "Booking date;Value date;Description;Amount;Balance",
    ]
    balance = opening
    for day, payee, amount in _transactions():
        balance = round(balance + amount, 2)
        value_day = day + dt.timedelta(days=1 if payee == "Refund" else 0)
        lines.append(f"{day:%d.%m.%Y};{value_day:%d.%m.%Y};{payee};{_eu(amount)};{_eu(balance)}")
    net = round(balance - opening, 2)
    lines += [
        "",
        f"Opening balance;;;;{_eu(opening)}",
        f"Net change;;;{_eu(net)};",
        f"Closing balance;;;;{_eu(balance)}",
    ]
    (workdir / "statement.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _monthly() -> dict[str, tuple[float, float]]:
    income: dict[str, float] = defaultdict(float)
    spending: dict[str, float] = defaultdict(float)
    for day, _, amount in _transactions():
        month = f"{day:%Y-%m}"
        if amount > 0:
            income[month] += amount
        else:
            spending[month] -= amount
    return {m: (round(income[m], 2), round(spending[m], 2)) for m in sorted(spending)}


def _net() -> float:
    return round(sum(a for _, _, a in _transactions()), 2)


@checker
def check(workdir: Path, answer: str) -> str:
    want = _monthly()
    rows = read_rows(workdir, "monthly.csv")
    got = {}
    for row in rows:
        if not {"month", "income", "spending"} <= set(row):
            raise Fail(f"monthly.csv needs columns month, income, spending (it has {sorted(row)})")
        got[row["month"][:7]] = (
            as_float(row["income"], "monthly.csv income"),
            as_float(row["spending"], "monthly.csv spending"),
        )
    if set(got) != set(want):
        raise Fail(f"monthly.csv has months {sorted(got)}, expected {sorted(want)}")
    for month, (income, spending) in want.items():
        if abs(got[month][0] - income) > 0.011 or abs(got[month][1] - spending) > 0.011:
            raise Fail(
                f"monthly.csv {month} is income {got[month][0]:g}, spending {got[month][1]:g}; "
                f"expected {income:g}, {spending:g}"
            )
    answer_has_number(answer, _net(), "the net change", rel=0, tol=0.011)
    return f"monthly income and spending right; net change {_net():,.2f}"


NAIVE = """\
import pandas as pd

df = pd.read_csv("statement.csv")
df["date"] = pd.to_datetime(df["date"])
df["month"] = df["date"].dt.strftime("%Y-%m")
income = df[df["amount"] > 0].groupby("month")["amount"].sum()
spending = -df[df["amount"] < 0].groupby("month")["amount"].sum()
monthly = pd.DataFrame({"income": income, "spending": spending}).fillna(0)
monthly.rename_axis("month").reset_index().to_csv("monthly.csv", index=False)
print(monthly)
print("net change over the quarter:", round(df["amount"].sum(), 2))
"""
TRY = """\
import pandas as pd
df = pd.read_csv("statement.csv")
df.head()
"""
LOOK = """\
with open("statement.csv", encoding="utf-8") as f:
    lines = f.read().splitlines()
print(len(lines), "lines")
print("\\n".join(lines[:9]))
print("...")
print("\\n".join(lines[-5:]))
"""
PARSE = """\
header = next(i for i, line in enumerate(lines) if line.startswith("Booking date;"))
df = pd.read_csv("statement.csv", sep=";", skiprows=header, decimal=",", thousands=".")
df["date"] = pd.to_datetime(df["Booking date"], format="%d.%m.%Y", errors="coerce")
print("not transactions:", df.loc[df["date"].isna(), "Booking date"].tolist())
df = df.dropna(subset=["date"])
df["Amount"] = df["Amount"].astype(float)
df["month"] = df["date"].dt.strftime("%Y-%m")
monthly = df.groupby("month")["Amount"].agg(
    income=lambda a: a[a > 0].sum(), spending=lambda a: -a[a < 0].sum()
).round(2)
monthly.reset_index().to_csv("monthly.csv", index=False)
print(monthly)
print(len(df), "transactions; net change", round(df["Amount"].sum(), 2))
"""
NO_THOUSANDS = """\
import pandas as pd
header = next(i for i, line in enumerate(lines) if line.startswith("Booking date;"))
df = pd.read_csv("statement.csv", sep=";", skiprows=header)
df["date"] = pd.to_datetime(df["Booking date"], format="%d.%m.%Y", errors="coerce")
df = df.dropna(subset=["date"])
df["Amount"] = pd.to_numeric(df["Amount"].str.replace(",", "."), errors="coerce")
df["month"] = df["date"].dt.strftime("%Y-%m")
monthly = df.groupby("month")["Amount"].agg(
    income=lambda a: a[a > 0].sum(), spending=lambda a: -a[a < 0].sum()
).round(2)
monthly.reset_index().to_csv("monthly.csv", index=False)
print(monthly)
print("net change", round(df["Amount"].sum(), 2))
"""


def _answer() -> str:
    return f"Saved monthly.csv; the net change over the quarter is {_net():,.2f} EUR."


SOLVED = Script(
    [TRY, LOOK, PARSE],
    _answer(),
    [
        "",
        "It is not a plain CSV; looking at the raw lines.",
        "A preamble, ';' separators, '1.234,56' amounts and balance lines at the foot.",
    ],
)
WRONG = Script(
    [LOOK, NO_THOUSANDS],
    "Saved monthly.csv; the net change over the quarter is in the output above.",
)
