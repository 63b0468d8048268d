"""Join/reshape (hard): two tables stacked in one file (stock, then unit costs), and SKUs
written in a different case in the second one."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from ._common import Script, answer_has_words, checker, expect_table, keyed, read_rows, rng

CATEGORY = "join/reshape"
TIER = "hard"
TRAP = "a second table (unit costs) below the first, its SKUs lower-cased: seen only by looking"
MAX_STEPS = 25
PROMPT = """
stock_report.csv is this week's stock report from our warehouse system. What is the stock
value (units on hand x unit cost) of each warehouse? Save stock_value.csv with columns
warehouse, value, and tell me which warehouse holds the most value.
"""
WAREHOUSES = ["Leipzig", "Rotterdam", "Lyon", "Gdansk"]


def _data() -> tuple[list[tuple[str, str, int]], dict[str, float]]:
    r = rng(2626)
    skus = [f"{p}-{n:03d}" for p in ("LMP", "DSK", "CHR", "SHF") for n in range(1, 13)]
    costs = {sku: round(float(r.uniform(3, 240)), 2) for sku in skus}
    stock = []
    for sku in skus:
        for wh in WAREHOUSES:
            if r.random() < 0.7:
                stock.append((sku, wh, int(r.integers(0, 400))))
    # The costliest lines sit in the warehouse that holds the fewest units.
    stock = [(s, w, q * 4 if w == "Gdansk" and costs[s] > 150 else q) for s, w, q in stock]
    return stock, costs


def setup(workdir: Path) -> None:
    stock, costs = _data()
    lines = ["sku,warehouse,on_hand", *(f"{s},{w},{q}" for s, w, q in stock), ""]
    lines.append("sku,description,unit_cost")
    names = {"LMP": "lamp", "DSK": "desk", "CHR": "chair", "SHF": "shelf"}
    for n, (sku, cost) in enumerate(sorted(costs.items())):
        shown = sku.lower() if n % 3 == 0 else sku
        lines.append(f"{shown},{names[sku[:3]]} {sku[-3:]},{cost}")
    (workdir / "stock_report.csv").write_text("\n".join(lines) + "\n")


def _values() -> dict[str, float]:
    stock, costs = _data()
    value: dict[str, float] = defaultdict(float)
    for sku, wh, qty in stock:
        value[wh] += qty * costs[sku]
    return {w: round(v, 2) for w, v in value.items()}


@checker
def check(workdir: Path, answer: str) -> str:
    want = _values()
    got = keyed(read_rows(workdir, "stock_value.csv"), "warehouse", "value", "stock_value.csv")
    expect_table(got, want, "stock_value.csv value", rel=1e-4)
    top = max(want, key=want.__getitem__)
    answer_has_words(answer, [top], "the warehouse with the most value")
    return f"stock values right; {top} holds the most"


NAIVE = """\
import pandas as pd

stock = pd.read_csv("stock_report.csv")
stock["value"] = stock["on_hand"] * stock["unit_cost"]
value = stock.groupby("warehouse")["value"].sum().round(2).sort_values(ascending=False)
value.reset_index().to_csv("stock_value.csv", index=False)
print(value)
print("most value:", value.index[0])
"""
TRY = """\
import pandas as pd
stock = pd.read_csv("stock_report.csv")
print(stock.dtypes)
stock["value"] = stock["on_hand"] * stock["unit_cost"]
"""
LOOK = """\
print(stock["warehouse"].value_counts().head(8))
blank = open("stock_report.csv").read().splitlines().index("")
print("blank line at", blank)
print(open("stock_report.csv").read().splitlines()[blank - 2 : blank + 4])
"""
SPLIT = """\
stock = pd.read_csv("stock_report.csv", nrows=blank - 1)
costs = pd.read_csv("stock_report.csv", skiprows=blank + 1)
print(len(stock), "stock lines,", len(costs), "costs")
merged = stock.merge(costs, on="sku", how="left")
print("stock lines without a cost:", merged["unit_cost"].isna().sum())
print(merged[merged["unit_cost"].isna()].head(3))
"""
JOIN = """\
costs["sku"] = costs["sku"].str.upper()
merged = stock.merge(costs, on="sku", how="left", validate="many_to_one")
assert merged["unit_cost"].notna().all()
merged["value"] = merged["on_hand"] * merged["unit_cost"]
value = merged.groupby("warehouse")["value"].sum().round(2).sort_values(ascending=False)
value.reset_index().to_csv("stock_value.csv", index=False)
print(value)
"""
WRONG_JOIN = """\
merged["value"] = merged["on_hand"] * merged["unit_cost"]
value = merged.groupby("warehouse")["value"].sum().round(2).sort_values(ascending=False)
value.reset_index().to_csv("stock_value.csv", index=False)
print(value)
"""


def _top() -> str:
    values = _values()
    return max(values, key=values.__getitem__)


SOLVED = Script(
    [TRY, LOOK, SPLIT, JOIN],
    f"Saved stock_value.csv; {_top()} holds the most stock value.",
    [
        "",
        "There is no unit_cost column, and on_hand is not numeric: looking at the file.",
        "Two tables stacked: stock lines, a blank line, then unit costs. Splitting them.",
        "A third of the cost table writes SKUs in lower case; normalising before the join.",
    ],
)
WRONG = Script(
    [TRY, LOOK, SPLIT, WRONG_JOIN],
    "Saved stock_value.csv; the warehouse with the most value is at the top of the output.",
)
