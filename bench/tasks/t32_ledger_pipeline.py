"""Debugging (hard): a four-module pipeline that runs cleanly and is wrong in three places,
each visible only when its output is checked against the invariant the prompt states."""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from pathlib import Path

from ._common import (
    Fail,
    Script,
    checker,
    expect_table,
    keyed,
    read_bytes,
    read_rows,
    rng,
    write_csv,
)

CATEGORY = "debugging"
TIER = "hard"
TRAP = "it runs without error: a glob that misses Oct-Dec, dropna on memo, a doubled account"
MAX_STEPS = 30
PROMPT = """
`python -m etl.run` builds out/department_totals.csv and out/summary.json from the monthly
ledger files in data/. The department totals must add up to the sum of every amount in
data/ledger_*.csv, and summary.json must count every ledger row and file. Today they do not.
Find the bugs in etl/, fix them there (keep the output formats), and run the pipeline again.
"""
DEPARTMENTS = {
    "4000": "Sales",
    "4100": "Sales",
    "5000": "Operations",
    "5100": "Operations",
    "5200": "IT",
    "6000": "Marketing",
    "6100": "Marketing",
    "7000": "Admin",
}
EXTRACT = '''\
"""Read the monthly ledger exports."""
from glob import glob

import pandas as pd


def ledger_files(folder):
    return sorted(glob(f"{folder}/ledger_2024_0*.csv"))


def load_ledgers(folder):
    files = ledger_files(folder)
    frames = [pd.read_csv(f, dtype={"account": str}) for f in files]
    return pd.concat(frames, ignore_index=True), files
'''
TRANSFORM = '''\
"""Clean the ledger rows and attach each account's department."""
import pandas as pd


def clean(ledger):
    ledger = ledger.dropna()
    ledger["amount"] = ledger["amount"].astype(float)
    return ledger


def attach_departments(ledger, accounts):
    return ledger.merge(accounts, on="account", how="inner")
'''
LOAD = '''\
"""Write the totals and the run summary."""
import json
from pathlib import Path


def write_outputs(totals, ledger, files, out="out"):
    Path(out).mkdir(exist_ok=True)
    totals.round(2).rename("total").rename_axis("department").reset_index().to_csv(
        f"{out}/department_totals.csv", index=False
    )
    summary = {"files": len(files), "rows": len(ledger), "total": round(float(totals.sum()), 2)}
    Path(f"{out}/summary.json").write_text(json.dumps(summary, indent=2))
    return summary
'''
RUN = '''\
"""python -m etl.run: ledger files in data/ -> out/department_totals.csv, out/summary.json."""
import pandas as pd

from etl.extract import load_ledgers
from etl.load import write_outputs
from etl.transform import attach_departments, clean


def main():
    ledger, files = load_ledgers("data")
    accounts = pd.read_csv("data/accounts.csv", dtype={"account": str})
    ledger = attach_departments(clean(ledger), accounts)
    totals = ledger.groupby("department")["amount"].sum()
    print(write_outputs(totals, ledger, files))


if __name__ == "__main__":
    main()
'''
SOURCES = {
    "etl/__init__.py": "",
    "etl/extract.py": EXTRACT,
    "etl/transform.py": TRANSFORM,
    "etl/load.py": LOAD,
    "etl/run.py": RUN,
}


def _ledger() -> list[tuple[int, dt.date, str, float, str]]:
    r = rng(3232)
    rows = []
    for n in range(1, 1201):
        day = dt.date(2024, 1, 1) + dt.timedelta(days=int(r.integers(0, 366)))
        account = str(r.choice(list(DEPARTMENTS)))
        amount = round(float(r.gamma(2, 400)) * (1 if account < "5000" else -1), 2)
        memo = "" if r.random() < 0.12 else str(r.choice(["invoice", "card", "transfer", "fee"]))
        rows.append((n, day, account, amount, memo))
    return rows


def setup(workdir: Path) -> None:
    by_month = defaultdict(list)
    for n, day, account, amount, memo in _ledger():
        by_month[day.month].append((n, day.isoformat(), account, amount, memo))
    for month, rows in by_month.items():
        write_csv(
            workdir / "data" / f"ledger_2024_{month:02d}.csv",
            ["entry_id", "date", "account", "amount", "memo"],
            rows,
        )
    accounts = [*DEPARTMENTS.items(), ("5200", "IT")]  # one account listed twice
    write_csv(workdir / "data" / "accounts.csv", ["account", "department"], accounts)
    for name, text in SOURCES.items():
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text(text)


def _totals() -> dict[str, float]:
    totals: dict[str, float] = defaultdict(float)
    for _, _, account, amount, _ in _ledger():
        totals[DEPARTMENTS[account]] += amount
    return {d: round(v, 2) for d, v in totals.items()}


def _source(workdir: Path, name: str) -> str | None:
    try:
        return read_bytes(workdir, name).decode(errors="replace")
    except Fail:
        return None


@checker
def check(workdir: Path, answer: str) -> str:
    rows = read_rows(workdir, "out/department_totals.csv")
    got = keyed(rows, "department", "total", "out/department_totals.csv")
    want = _totals()
    expect_table(got, want, "out/department_totals.csv total", rel=1e-7)
    try:
        summary = json.loads(read_bytes(workdir, "out/summary.json"))
    except ValueError:
        raise Fail("out/summary.json is not JSON") from None
    if not isinstance(summary, dict):
        raise Fail("out/summary.json is not an object")
    expected = {"files": 12, "rows": len(_ledger()), "total": round(sum(want.values()), 2)}
    for key, value in expected.items():
        if not isinstance(summary.get(key), (int, float)) or abs(summary[key] - value) > 0.011:
            raise Fail(f"out/summary.json {key} is {summary.get(key)!r}, expected {value}")
    if all(_source(workdir, name) == text for name, text in SOURCES.items()):
        raise Fail("the outputs are right, but nothing in etl/ was changed")
    return "the pipeline's totals and summary are right"


NAIVE = """\
import subprocess
import sys

import pandas as pd

subprocess.run([sys.executable, "-m", "etl.run"], check=True)
ledger = pd.concat(pd.read_csv(f) for f in sorted(__import__("glob").glob("data/ledger_*.csv")))
totals = pd.read_csv("out/department_totals.csv")
print("ledger sum:", round(ledger["amount"].sum(), 2), "totals:", round(totals["total"].sum(), 2))
print(open("out/summary.json").read())
"""
RUN_IT = """\
import glob, json, subprocess, sys
import pandas as pd
print(subprocess.run([sys.executable, "-m", "etl.run"], capture_output=True, text=True).stdout)
files = sorted(glob.glob("data/ledger_*.csv"))
raw = pd.concat([pd.read_csv(f, dtype={"account": str}) for f in files], ignore_index=True)
out = pd.read_csv("out/department_totals.csv")
print(len(files), "files,", len(raw), "rows, sum", round(raw["amount"].sum(), 2))
print("pipeline total:", round(out["total"].sum(), 2))
"""
READ = """\
for name in ["etl/extract.py", "etl/transform.py", "etl/run.py"]:
    print("#", name)
    print(open(name).read())
"""
PROBE = """\
print("files the glob takes:", len(glob.glob("data/ledger_2024_0*.csv")), "of", len(files))
print("rows with an empty memo:", raw["memo"].isna().sum(), "-> all dropped by dropna()")
accounts = pd.read_csv("data/accounts.csv", dtype={"account": str})
print("accounts listed twice:", accounts[accounts["account"].duplicated()].to_dict("records"))
"""
FIX_ALL = """\
def patch(path, old, new):
    text = open(path).read()
    assert old in text, (path, old)
    open(path, "w").write(text.replace(old, new))

patch("etl/extract.py", "ledger_2024_0*.csv", "ledger_2024_*.csv")
patch("etl/transform.py", "ledger.dropna()", 'ledger.dropna(subset=["amount"]).copy()')
patch(
    "etl/transform.py",
    'return ledger.merge(accounts, on="account", how="inner")',
    'accounts = accounts.drop_duplicates()\\n'
    '    return ledger.merge(accounts, on="account", how="left", validate="many_to_one")',
)
print(subprocess.run([sys.executable, "-m", "etl.run"], capture_output=True, text=True))
out = pd.read_csv("out/department_totals.csv")
print("pipeline total:", round(out["total"].sum(), 2), "ledger:", round(raw["amount"].sum(), 2))
"""
FIX_GLOB = """\
text = open("etl/extract.py").read()
open("etl/extract.py", "w").write(text.replace("ledger_2024_0*.csv", "ledger_2024_*.csv"))
print(subprocess.run([sys.executable, "-m", "etl.run"], capture_output=True, text=True).stdout)
"""
SOLVED = Script(
    [RUN_IT, READ, PROBE, FIX_ALL],
    "Fixed three bugs in etl/: extract.py's glob skipped October-December, transform.clean's "
    "dropna() dropped rows with an empty memo, and account 5200 listed twice in accounts.csv "
    "doubled its rows in the join (now de-duplicated and validated many-to-one). The totals "
    "now equal the ledger sum and summary.json counts all 12 files and 1,200 rows.",
    [
        "",
        "The pipeline total differs from the raw ledger sum. Reading the code.",
        "Candidates: the glob ledger_2024_0*, dropna() over all columns, the inner join.",
        "All three confirmed; fixing them in etl/ and re-running.",
    ],
)
WRONG = Script(
    [RUN_IT, READ, FIX_GLOB],
    "Fixed etl/extract.py: its glob skipped October-December. Re-ran the pipeline.",
)
