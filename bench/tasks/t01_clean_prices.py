"""Load/clean: prices stored as text with currency signs, thousands separators and gaps."""

from __future__ import annotations

from pathlib import Path

from ._common import Fail, Script, answer_has_number, checker, keyed, read_rows, rng, write_csv

CATEGORY = "load/clean"
TRAP = "price is text ('$1,234.50', 'n/a'): a plain float conversion fails"
PROMPT = """
sales_raw.csv has one row per sale. Clean it: keep only the rows whose price is known, make
price a number, and save the result as clean.csv with columns id, product, price, qty.
Then tell me the total revenue (sum of price x qty) of the cleaned rows.
"""
PRODUCTS = ["lamp", "desk", "chair", "shelf", "rug"]


def _rows() -> list[tuple[int, str, float | None, int]]:
    r = rng(101)
    rows = []
    for i in range(1, 61):
        price = None if r.random() < 0.12 else round(float(r.uniform(5, 2500)), 2)
        rows.append((i, PRODUCTS[int(r.integers(5))], price, int(r.integers(1, 10))))
    return rows


def _shown(i: int, price: float | None) -> str:
    if price is None:
        return ["n/a", "", "N/A"][i % 3]
    return [f"${price:,.2f}", f"{price}", f" {price:.2f} "][i % 3]


def setup(workdir: Path) -> None:
    rows = [(i, p, _shown(i, price), q) for i, p, price, q in _rows()]
    write_csv(workdir / "sales_raw.csv", ["id", "product", "price", "qty"], rows)


def _total() -> float:
    return round(sum(p * q for _, _, p, q in _rows() if p is not None), 2)


@checker
def check(workdir: Path, answer: str) -> str:
    want = {str(i): p for i, _, p, _ in _rows() if p is not None}
    got = keyed(read_rows(workdir, "clean.csv"), "id", "price", "clean.csv")
    got = {k.split(".")[0]: v for k, v in got.items()}
    if set(got) != set(want):
        raise Fail(f"clean.csv has {len(got)} rows, expected the {len(want)} with a known price")
    bad = [k for k in want if abs(got[k] - want[k]) > 0.005]
    if bad:
        raise Fail(f"clean.csv has wrong prices for ids {bad[:5]}")
    answer_has_number(answer, _total(), "the total revenue", rel=1e-4)
    return f"{len(want)} clean rows, total {_total():,.2f}"


READ = """\
import csv
rows = list(csv.DictReader(open("sales_raw.csv")))
total = sum(float(r["price"]) * int(r["qty"]) for r in rows)
"""
FIX = """\
def parse(text):
    text = text.strip().replace("$", "").replace(",", "")
    return None if text.lower() in ("", "n/a") else float(text)

clean = [dict(r, price=parse(r["price"])) for r in rows]
clean = [r for r in clean if r["price"] is not None]
with open("clean.csv", "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=["id", "product", "price", "qty"])
    writer.writeheader()
    writer.writerows(clean)
total = sum(r["price"] * int(r["qty"]) for r in clean)
print(len(clean), round(total, 2))
"""
WRONG_FIX = """\
clean = []
for r in rows:
    try:
        clean.append(dict(r, price=float(r["price"])))
    except ValueError:
        continue  # drops '$1,234.50' along with 'n/a'
with open("clean.csv", "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=["id", "product", "price", "qty"])
    writer.writeheader()
    writer.writerows(clean)
total = sum(r["price"] * int(r["qty"]) for r in clean)
print(len(clean), round(total, 2))
"""
SOLVED = Script(
    [READ, FIX],
    f"Saved clean.csv; the total revenue of the cleaned rows is {_total():,.2f}.",
    ["", "Prices carry '$' and thousands separators, and some are missing; parsing them."],
)
WRONG = Script([READ, WRONG_FIX], "Saved clean.csv; the total revenue is in the output above.")
