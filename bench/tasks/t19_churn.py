"""Modelling: a classifier with a categorical feature, scored on held-out labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._common import Fail, Script, checker, column, read_rows, rng, write_csv

CATEGORY = "modelling"
TRAP = ""
PROMPT = """
customers_train.csv has customers with tenure_months, monthly_fee, support_calls, plan
(basic/plus/pro) and whether they churned (0/1). customers_test.csv has the same columns
without churned. Train a classifier and save churn_predictions.csv with columns id and churned
(0 or 1) for every test customer. Aim for an accuracy above 80 %.
"""
THRESHOLD = 0.8
PLANS = ["basic", "plus", "pro"]


def _data() -> tuple[list[tuple], np.ndarray]:
    r = rng(1919)
    n = 600
    tenure = r.integers(1, 72, n)
    fee = r.uniform(10, 120, n).round(2)
    calls = r.poisson(1.5, n)
    plan = r.integers(0, 3, n)
    score = -0.06 * tenure + 0.025 * fee + 0.7 * calls - 0.8 * plan - 0.5
    churned = (score + r.logistic(0, 0.3, n) > 0).astype(int)
    rows = [
        (i, int(t), float(f), int(c), PLANS[p])
        for i, (t, f, c, p) in enumerate(zip(tenure, fee, calls, plan, strict=True))
    ]
    return rows, churned


def setup(workdir: Path) -> None:
    rows, churned = _data()
    header = ["id", "tenure_months", "monthly_fee", "support_calls", "plan"]
    write_csv(
        workdir / "customers_train.csv",
        [*header, "churned"],
        [(*row, int(y)) for row, y in zip(rows[:450], churned[:450], strict=True)],
    )
    write_csv(workdir / "customers_test.csv", header, rows[450:])


@checker
def check(workdir: Path, answer: str) -> str:
    rows, churned = _data()
    truth = {row[0]: int(y) for row, y in zip(rows[450:], churned[450:], strict=True)}
    got_rows = read_rows(workdir, "churn_predictions.csv")
    ids = [int(float(i)) for i in column(got_rows, "id", "churn_predictions.csv")]
    labels = [int(float(v)) for v in column(got_rows, "churned", "churn_predictions.csv")]
    if sorted(ids) != sorted(truth):
        raise Fail(f"churn_predictions.csv has {len(ids)} ids, expected the {len(truth)} test ids")
    accuracy = float(np.mean([truth[i] == y for i, y in zip(ids, labels, strict=True)]))
    if accuracy < THRESHOLD:
        raise Fail(f"accuracy on held-out labels is {accuracy:.3f}, below {THRESHOLD}")
    return f"accuracy {accuracy:.3f} on held-out labels"


FIT = """\
import csv
import numpy as np
def load(name):
    rows = list(csv.DictReader(open(name)))
    plans = ["basic", "plus", "pro"]
    X = np.array([[float(r["tenure_months"]), float(r["monthly_fee"]), float(r["support_calls"])]
                  + [float(r["plan"] == p) for p in plans[1:]] for r in rows])
    return rows, X
train_rows, X = load("customers_train.csv")
y = np.array([int(r["churned"]) for r in train_rows])
mu, sd = X.mean(0), X.std(0)
Z = np.column_stack([(X - mu) / sd, np.ones(len(X))])
w = np.zeros(Z.shape[1])
for _ in range(3000):  # logistic regression by gradient descent
    p = 1 / (1 + np.exp(-Z @ w))
    w -= 0.1 * Z.T @ (p - y) / len(y)
print("train accuracy", ((Z @ w > 0) == y).mean())
test_rows, Xt = load("customers_test.csv")
pred = (np.column_stack([(Xt - mu) / sd, np.ones(len(Xt))]) @ w > 0).astype(int)
with open("churn_predictions.csv", "w", newline="") as f:
    out = csv.writer(f)
    out.writerow(["id", "churned"])
    out.writerows((r["id"], int(v)) for r, v in zip(test_rows, pred))
"""
MAJORITY = FIT.replace(
    "pred = (np.column_stack([(Xt - mu) / sd, np.ones(len(Xt))]) @ w > 0).astype(int)",
    "pred = np.ones(len(Xt), dtype=int)  # everyone churns",
)
SOLVED = Script([FIT], "Trained a logistic regression; churn_predictions.csv is saved.")
WRONG = Script([MAJORITY], "Saved churn_predictions.csv.")
