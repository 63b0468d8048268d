"""Load/clean: duplicate customers that differ only in case and stray spaces."""

from __future__ import annotations

from pathlib import Path

from ._common import Fail, Script, answer_has_number, checker, column, read_rows, rng, write_csv

CATEGORY = "load/clean"
TRAP = ""
PROMPT = """
customers.csv has duplicate customers: the same email address written with different
capitalisation or surrounding spaces. Remove the duplicates (same email ignoring case and
surrounding spaces; keep the first row of each), save the result as customers_clean.csv with
the same columns, and tell me how many unique customers there are.
"""


def _rows() -> list[tuple[int, str, str]]:
    r = rng(303)
    people = [(f"user{i}@example.com", f"Name {i}") for i in range(80)]
    rows, n = [], 1
    for email, name in people:
        for copy in range(int(r.choice([1, 1, 2, 3]))):
            shown = email if copy == 0 else [email.upper(), f" {email} ", email.title()][copy % 3]
            rows.append((n, shown, name))
            n += 1
    order = r.permutation(len(rows))
    return [(i + 1, rows[j][1], rows[j][2]) for i, j in enumerate(order)]


def _unique() -> dict[str, int]:
    first: dict[str, int] = {}
    for ident, email, _ in _rows():
        first.setdefault(email.strip().lower(), ident)
    return first


def setup(workdir: Path) -> None:
    write_csv(workdir / "customers.csv", ["id", "email", "name"], _rows())


@checker
def check(workdir: Path, answer: str) -> str:
    want = _unique()
    rows = read_rows(workdir, "customers_clean.csv")
    ids = sorted(int(float(i)) for i in column(rows, "id", "customers_clean.csv"))
    if ids != sorted(want.values()):
        raise Fail(
            f"customers_clean.csv keeps {len(ids)} rows, expected the first of each of "
            f"{len(want)} customers"
        )
    answer_has_number(answer, len(want), "the number of unique customers")
    return f"{len(want)} unique customers"


LOAD = """\
import csv
rows = list(csv.DictReader(open("customers.csv")))
seen, keep = set(), []
for row in rows:
    key = row["email"].strip().lower()
    if key not in seen:
        seen.add(key)
        keep.append(row)
with open("customers_clean.csv", "w", newline="") as f:
    writer = csv.DictWriter(f, fieldnames=["id", "email", "name"])
    writer.writeheader()
    writer.writerows(keep)
print(len(rows), len(keep))
"""
CASE_ONLY = LOAD.replace('row["email"].strip().lower()', 'row["email"].lower()')
SOLVED = Script([LOAD], f"There are {len(_unique())} unique customers; saved customers_clean.csv.")
WRONG = Script([CASE_ONLY], "Saved customers_clean.csv; the count is printed above.")
