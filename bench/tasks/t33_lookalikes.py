"""Modelling (hard): each customer's nearest neighbour among 16,000, under a memory budget
(the task's limits) in which the full distance matrix (2 GiB) cannot be built: blocks it is."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np

from ._common import Fail, Script, as_float, checker, read_rows, rng

CATEGORY = "modelling"
TIER = "hard"
TRAP = "the 16,000 x 16,000 distance matrix raises MemoryError; a block must skip itself"
MAX_STEPS = 25
LIMITS = {"memory_mb": 1024}
"""Pandas, BLAS buffers and pyarrow's allocator take about 400 MiB of the data segment; a
block of distances fits in the rest, the whole 2 GiB matrix does not. (Much above 1.2 GiB,
pyarrow's allocator reserves a 1 GiB arena of its own and the blocks would no longer fit.)"""
PROMPT = """
customers.csv has ten numeric features for each of our 16,000 customers. For every customer,
find the most similar other customer: the smallest Euclidean distance between their
standardised features (each feature scaled to mean 0 and standard deviation 1). Save
nearest.csv with columns customer_id, nearest_id, distance.
"""
COLUMNS = ["age", "income", "tenure_months", "visits_per_month", "avg_basket", "returns_rate",
           "support_calls", "discount_share", "app_sessions", "newsletter_clicks"]  # fmt: skip
CUSTOMERS = 16_000


@functools.lru_cache(maxsize=1)
def _features() -> np.ndarray:
    """The features as written (rounded), customers in segments of different shapes."""
    r = rng(3333)
    segment = r.integers(0, 6, CUSTOMERS)
    centres = r.normal(0, 1.5, (6, len(COLUMNS)))
    spread = r.uniform(0.4, 1.2, (6, len(COLUMNS)))
    z = centres[segment] + spread[segment] * r.normal(0, 1, (CUSTOMERS, len(COLUMNS)))
    scale = np.array([9, 14_000, 20, 3, 18, 0.04, 1.2, 0.08, 11, 2.5])
    offset = np.array([41, 52_000, 38, 6, 64, 0.09, 2, 0.2, 30, 4])
    return np.round(offset + scale * z, 3)


def setup(workdir: Path) -> None:
    lines = ["customer_id," + ",".join(COLUMNS)]
    for n, row in enumerate(_features().tolist(), 1):
        lines.append(f"C{n:05d}," + ",".join(f"{v:g}" for v in row))
    (workdir / "customers.csv").write_text("\n".join(lines) + "\n")


@functools.lru_cache(maxsize=1)
def _standardised() -> np.ndarray:
    x = _features()
    return (x - x.mean(axis=0)) / x.std(axis=0)


@functools.lru_cache(maxsize=1)
def _nearest() -> np.ndarray:
    """The distance from each customer to its nearest other customer, computed in blocks."""
    z = _standardised()
    squares = (z**2).sum(axis=1)
    best = np.empty(len(z))
    for start in range(0, len(z), 2000):
        block = slice(start, start + 2000)
        d2 = z[block] @ z.T
        d2 *= -2
        d2 += squares[None, :]
        d2 += squares[block, None]
        d2[np.arange(d2.shape[0]), np.arange(start, start + d2.shape[0])] = np.inf
        best[block] = np.sqrt(np.maximum(d2.min(axis=1), 0))
    return best


def _index(customer: str) -> int:
    try:
        n = int(customer.strip().lstrip("C"))
    except ValueError:
        raise Fail(f"nearest.csv: {customer!r} is not a customer id") from None
    if not 1 <= n <= CUSTOMERS:
        raise Fail(f"nearest.csv: {customer!r} is not a customer id")
    return n - 1


@checker
def check(workdir: Path, answer: str) -> str:
    rows = read_rows(workdir, "nearest.csv")
    if not rows or not {"customer_id", "nearest_id", "distance"} <= set(rows[0]):
        raise Fail("nearest.csv needs columns customer_id, nearest_id, distance")
    z, best = _standardised(), _nearest()
    seen = set()
    for row in rows:
        i, j = _index(row["customer_id"]), _index(row["nearest_id"])
        seen.add(i)
        if i == j:
            raise Fail(f"nearest.csv: {row['customer_id']} is given as its own nearest customer")
        # Ties may resolve either way: the named customer must be at the smallest distance.
        actual = float(np.sqrt(((z[i] - z[j]) ** 2).sum()))
        if not np.isclose(actual, best[i], rtol=1e-6, atol=1e-9):
            raise Fail(
                f"nearest.csv: {row['nearest_id']} is at {actual:.4f} from "
                f"{row['customer_id']}, the nearest customer is at {best[i]:.4f}"
            )
        if not np.isclose(as_float(row["distance"], "nearest.csv distance"), best[i], rtol=1e-3):
            raise Fail(f"nearest.csv: distance for {row['customer_id']} is {row['distance']}")
    if len(seen) != CUSTOMERS:
        raise Fail(f"nearest.csv covers {len(seen)} customers, expected {CUSTOMERS}")
    return f"nearest neighbours right for all {CUSTOMERS} customers"


NAIVE = """\
import numpy as np
import pandas as pd

df = pd.read_csv("customers.csv")
X = df.drop(columns="customer_id").to_numpy(dtype=float)
X = (X - X.mean(axis=0)) / X.std(axis=0)
sq = (X**2).sum(axis=1)
d2 = sq[:, None] + sq[None, :] - 2 * X @ X.T
np.fill_diagonal(d2, np.inf)
nearest = d2.argmin(axis=1)
pd.DataFrame({
    "customer_id": df["customer_id"],
    "nearest_id": df["customer_id"].to_numpy()[nearest],
    "distance": np.sqrt(np.maximum(d2[np.arange(len(X)), nearest], 0)),
}).to_csv("nearest.csv", index=False)
print("done")
"""
FULL = """\
import numpy as np
import pandas as pd
df = pd.read_csv("customers.csv")
print(df.shape)
X = df.drop(columns="customer_id").to_numpy(dtype=float)
X = (X - X.mean(axis=0)) / X.std(axis=0)
sq = (X**2).sum(axis=1)
d2 = sq[:, None] + sq[None, :] - 2 * X @ X.T
"""
BLOCKS = """\
nearest = np.empty(len(X), dtype=int)
best = np.empty(len(X))
for start in range(0, len(X), 500):
    stop = min(start + 500, len(X))
    d2 = sq[start:stop, None] + sq[None, :] - 2 * X[start:stop] @ X.T
    d2[np.arange(stop - start), np.arange(start, stop)] = np.inf  # not oneself
    nearest[start:stop] = d2.argmin(axis=1)
    best[start:stop] = np.sqrt(np.maximum(d2.min(axis=1), 0))
ids = df["customer_id"].to_numpy()
pd.DataFrame({"customer_id": ids, "nearest_id": ids[nearest], "distance": best.round(6)}).to_csv(
    "nearest.csv", index=False
)
print(pd.read_csv("nearest.csv").head())
"""
WITH_SELF = BLOCKS.replace(
    "    d2[np.arange(stop - start), np.arange(start, stop)] = np.inf  # not oneself\n", ""
)
SOLVED = Script(
    [FULL, BLOCKS],
    "Saved nearest.csv: each customer's nearest other customer on standardised features. The "
    "full 16,000 x 16,000 distance matrix does not fit in memory, so it was computed in blocks "
    "of 500 rows, each customer's own distance excluded.",
    ["", "The full distance matrix needs 2 GiB: computing it 500 rows at a time."],
)
WRONG = Script([FULL, WITH_SELF], "Saved nearest.csv, computed in blocks of 500 rows.")
