"""Aggregate: the best-selling products from a JSON-lines order export."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from ._common import Fail, Script, checker, rng

CATEGORY = "aggregate"
TRAP = ""
PROMPT = """
orders.jsonl has one JSON order per line, each with a list of items (sku and quantity).
Which three SKUs sold the most units in total? Answer with the three SKUs, best first, and
their unit counts.
"""
SKUS = [f"SKU-{n:03d}" for n in (101, 117, 204, 230, 311, 342, 408, 455)]


def _orders() -> list[dict]:
    r = rng(505)
    p = [0.22, 0.05, 0.17, 0.08, 0.2, 0.04, 0.14, 0.1]
    orders = []
    for i in range(250):
        items = [
            {"sku": str(r.choice(SKUS, p=p)), "quantity": int(r.integers(1, 5))}
            for _ in range(int(r.integers(1, 4)))
        ]
        orders.append({"order": 9000 + i, "customer": int(r.integers(1, 60)), "items": items})
    return orders


def _top() -> list[tuple[str, int]]:
    units: Counter[str] = Counter()
    for order in _orders():
        for item in order["items"]:
            units[item["sku"]] += item["quantity"]
    return units.most_common(3)


def setup(workdir: Path) -> None:
    with (workdir / "orders.jsonl").open("w") as f:
        for order in _orders():
            f.write(json.dumps(order) + "\n")


@checker
def check(workdir: Path, answer: str) -> str:
    want = [sku for sku, _ in _top()]
    found = sorted((answer.find(s), s) for s in SKUS if s in answer)
    named = [s for _, s in found]
    if named[:3] != want:
        raise Fail(f"the answer names {named[:3]} first, expected {want} in that order")
    return f"top three {want}"


COUNT = """\
import json
from collections import Counter
units = Counter()
for line in open("orders.jsonl"):
    for item in json.loads(line)["items"]:
        units[item["sku"]] += item["quantity"]
print(units.most_common(3))
"""
BY_ORDERS = COUNT.replace('units[item["sku"]] += item["quantity"]', 'units[item["sku"]] += 1')
_ANSWER = ", ".join(f"{s} ({n} units)" for s, n in _top())
SOLVED = Script([COUNT], f"The top three SKUs by units sold: {_ANSWER}.")
_REVERSED = ", ".join(s for s, _ in reversed(_top()))
WRONG = Script([BY_ORDERS], f"Counting orders per SKU, the top three are {_REVERSED}.")
