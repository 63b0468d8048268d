"""Modelling: a regression whose predictions are scored on held-out truth."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._common import Fail, Script, as_float, checker, column, read_rows, rng, write_csv

CATEGORY = "modelling"
TRAP = ""
PROMPT = """
train.csv has houses with features area_m2, rooms, age_years and their price; test.csv has
the same features (and an id) but no price. Fit a model on train.csv, predict the price of
every house in test.csv, and save predictions.csv with columns id and price.
"""
THRESHOLD = 0.9


def _data() -> tuple[np.ndarray, np.ndarray]:
    r = rng(1818)
    n = 400
    x = np.column_stack([r.uniform(35, 220, n), r.integers(1, 7, n), r.uniform(0, 80, n)])
    price = 3200 * x[:, 0] + 9000 * x[:, 1] - 1100 * x[:, 2] + 40_000 + r.normal(0, 20_000, n)
    return np.round(x, 1), np.round(price, -2)


def setup(workdir: Path) -> None:
    x, y = _data()
    header = ["area_m2", "rooms", "age_years"]
    write_csv(
        workdir / "train.csv",
        [*header, "price"],
        [(*a, b) for a, b in zip(x[:300], y[:300], strict=True)],
    )
    write_csv(workdir / "test.csv", ["id", *header], [(i, *a) for i, a in enumerate(x[300:])])


@checker
def check(workdir: Path, answer: str) -> str:
    truth = _data()[1][300:]
    rows = read_rows(workdir, "predictions.csv")
    ids = [int(float(i)) for i in column(rows, "id", "predictions.csv")]
    if sorted(ids) != list(range(len(truth))):
        raise Fail(f"predictions.csv has {len(ids)} ids, expected ids 0..{len(truth) - 1}")
    pred = np.empty(len(truth))
    for i, p in zip(ids, column(rows, "price", "predictions.csv"), strict=True):
        pred[i] = as_float(p, "predictions.csv price")
    r2 = 1 - np.sum((truth - pred) ** 2) / np.sum((truth - truth.mean()) ** 2)
    if r2 < THRESHOLD:
        raise Fail(f"R² on the held-out prices is {r2:.3f}, below {THRESHOLD}")
    return f"R² = {r2:.3f} on held-out prices"


FIT = """\
import numpy as np
train = np.genfromtxt("train.csv", delimiter=",", names=True)
test = np.genfromtxt("test.csv", delimiter=",", names=True)
features = ["area_m2", "rooms", "age_years"]
X = np.column_stack([train[f] for f in features] + [np.ones(len(train))])
coef, *_ = np.linalg.lstsq(X, train["price"], rcond=None)
Xt = np.column_stack([test[f] for f in features] + [np.ones(len(test))])
pred = Xt @ coef
np.savetxt("predictions.csv", np.column_stack([test["id"], pred]), delimiter=",",
           header="id,price", comments="", fmt=["%d", "%.0f"])
print(coef)
"""
MEAN = FIT.replace("pred = Xt @ coef", "pred = np.full(len(test), train['price'].mean())")
SOLVED = Script([FIT], "Fitted a linear model (price ~ area, rooms, age); predictions.csv saved.")
WRONG = Script([MEAN], "Saved predictions.csv with a baseline prediction.")
