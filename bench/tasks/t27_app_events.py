"""Aggregate (hard): an event log written by three app versions, each with its own keys
(``user`` / ``userId`` / ``user.id``, euros / cents / a nested price, ``event`` / ``type``)."""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from pathlib import Path

from ._common import Fail, Script, answer_has_words, checker, expect_table, keyed, read_rows, rng

CATEGORY = "aggregate"
TIER = "hard"
TRAP = "three schemas in one log (keys, cents, nesting differ): seen only by reading records"
MAX_STEPS = 25
PROMPT = """
events.jsonl is our app's event log for May 2024, one JSON object per line, from every app
version in use. What did each user spend on purchases, in EUR? Save user_revenue.csv with
columns user, revenue, and tell me the three users who spent the most.
"""
USERS = [f"u{n:03d}" for n in range(1, 41)]


def _events() -> list[tuple[int, dt.datetime, str, str, float]]:
    """(app major version, time, user, kind, amount in EUR)."""
    r = rng(2727)
    start = dt.datetime(2024, 5, 1)
    weights = r.gamma(1.2, 1.0, len(USERS))
    rows = []
    for _ in range(900):
        user = USERS[int(r.choice(len(USERS), p=weights / weights.sum()))]
        when = start + dt.timedelta(seconds=int(r.integers(0, 31 * 86400)))
        kind = str(r.choice(["view", "purchase", "login"], p=[0.55, 0.3, 0.15]))
        amount = round(float(r.gamma(2, 9)), 2) if kind == "purchase" else 0.0
        version = int(r.choice([1, 2, 3], p=[0.25, 0.35, 0.4]))
        rows.append((version, when, user, kind, amount))
    return sorted(rows, key=lambda row: row[1])


def _record(version: int, when: dt.datetime, user: str, kind: str, amount: float) -> dict:
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    if version == 1:
        rec = {"event": kind, "user": user, "ts": stamp}
        return {**rec, "amount": amount} if kind == "purchase" else rec
    if version == 2:
        rec = {"event": kind, "userId": user, "ts": stamp, "app": "2.4.1"}
        return {**rec, "amount_cents": round(amount * 100)} if kind == "purchase" else rec
    rec = {"type": kind, "user": {"id": user, "plan": "pro"}, "timestamp": int(when.timestamp())}
    if kind == "purchase":
        rec["price"] = {"value": amount, "currency": "EUR"}
    return {**rec, "app": "3.0.2"}


def setup(workdir: Path) -> None:
    with (workdir / "events.jsonl").open("w") as f:
        for event in _events():
            f.write(json.dumps(_record(*event)) + "\n")


def _revenue() -> dict[str, float]:
    spent: dict[str, float] = defaultdict(float)
    for _, _, user, kind, amount in _events():
        if kind == "purchase":
            spent[user] += amount
    return {u: round(v, 2) for u, v in spent.items()}


def _top3() -> list[str]:
    revenue = _revenue()
    return sorted(revenue, key=lambda u: -revenue[u])[:3]


@checker
def check(workdir: Path, answer: str) -> str:
    want = _revenue()
    got = keyed(read_rows(workdir, "user_revenue.csv"), "user", "revenue", "user_revenue.csv")
    got = {k: v for k, v in got.items() if v != 0 or k in want}
    expect_table(got, want, "user_revenue.csv revenue", rel=1e-4)
    top = _top3()
    named = [u for u in USERS if u in answer]
    if len(named) > 6:
        raise Fail(f"the answer names {len(named)} users; the three top spenders were asked for")
    answer_has_words(answer, top, "the three top spenders")
    return f"revenue per user right; top spenders {', '.join(top)}"


NAIVE = """\
import pandas as pd

events = pd.read_json("events.jsonl", lines=True)
purchases = events[events["event"] == "purchase"]
revenue = purchases.groupby("user")["amount"].sum().round(2).sort_values(ascending=False)
revenue.rename("revenue").rename_axis("user").reset_index().to_csv(
    "user_revenue.csv", index=False
)
print("top 3 users:", ", ".join(revenue.index[:3]))
"""
LOOK = """\
import json
from collections import Counter
records = [json.loads(line) for line in open("events.jsonl")]
print(len(records), "records")
print(Counter(tuple(sorted(r)) for r in records).most_common())
"""
SAMPLES = """\
money = {"amount", "amount_cents", "price"}
for keys in {tuple(sorted(r)) for r in records if money & set(r)}:
    print(next(r for r in records if tuple(sorted(r)) == keys))
"""
PARSE = """\
import pandas as pd

def normalise(r):
    user = r.get("user", r.get("userId"))
    if isinstance(user, dict):
        user = user["id"]
    kind = r.get("event", r.get("type"))
    if "amount" in r:
        eur = r["amount"]
    elif "amount_cents" in r:
        eur = r["amount_cents"] / 100
    elif "price" in r:
        assert r["price"]["currency"] == "EUR"
        eur = r["price"]["value"]
    else:
        eur = 0.0
    return {"user": user, "kind": kind, "eur": eur}

events = pd.DataFrame([normalise(r) for r in records])
print(events["kind"].value_counts())
revenue = events[events["kind"] == "purchase"].groupby("user")["eur"].sum().round(2)
revenue = revenue.sort_values(ascending=False)
revenue.rename("revenue").rename_axis("user").reset_index().to_csv("user_revenue.csv", index=False)
print(revenue.head(3))
"""
CENTS_AS_EUR = PARSE.replace('r["amount_cents"] / 100', 'r["amount_cents"]')

SOLVED = Script(
    [LOOK, SAMPLES, PARSE],
    f"Saved user_revenue.csv. The three top spenders are {', '.join(_top3())}.",
    [
        "",
        "Three different shapes of record; looking at one purchase of each.",
        "v1: user/amount in EUR; v2: userId/amount_cents; v3: nested user.id and price.value.",
    ],
)
WRONG = Script(
    [LOOK, SAMPLES, CENTS_AS_EUR],
    "Saved user_revenue.csv; the three top spenders are at the top of the output.",
)
