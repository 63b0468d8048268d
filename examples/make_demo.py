"""Build ``examples/demo.ipynb``: a demo session whose model turns are scripted by hand.

The demo shows the whole loop without a model or an API key: a plan, a cell that fails, the
fix, and a plot. The assistant turns below were written by hand (and the notebook says so in
its metadata); everything else — the outputs, the traceback, the image — is real, produced
by running those turns through the agent loop in a sandbox kernel.

    python examples/make_demo.py            # rewrites examples/demo.ipynb
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import tempfile
from pathlib import Path

from codeagent_jupyter.config import AgentConfig, SandboxLimits
from codeagent_jupyter.core.assembly import build_agent
from codeagent_jupyter.models.replay import ReplayModel
from codeagent_jupyter.record.recorder import NotebookRecorder
from codeagent_jupyter.sandbox import Sandbox
from codeagent_jupyter.tools import ToolBox

PROMPT = "Make a small daily sales dataset for 2024, then plot the monthly revenue."

MAKE_DATA = """\
import csv
import datetime as dt
import numpy as np

rng = np.random.default_rng(7)
start = dt.date(2024, 1, 1)
with open("sales.csv", "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["date", "amount"])
    for day in range(366):
        date = start + dt.timedelta(days=day)
        season = 1 + 0.3 * np.sin(2 * np.pi * day / 366)
        writer.writerow([date.isoformat(), round(float(rng.gamma(4, 250) * season), 2)])
print("wrote sales.csv with 366 rows")
"""

AGGREGATE_WRONG = """\
from collections import defaultdict

monthly = defaultdict(float)
with open("sales.csv") as f:
    for row in csv.DictReader(f):
        monthly[row["date"][:7]] += float(row["revenue"])
"""

AGGREGATE_FIXED = """\
monthly = defaultdict(float)
with open("sales.csv") as f:
    for row in csv.DictReader(f):
        monthly[row["date"][:7]] += float(row["amount"])
for month, total in sorted(monthly.items()):
    print(f"{month}  {total:>10,.0f}")
"""

PLOT = """\
import matplotlib.pyplot as plt

months = sorted(monthly)
fig, ax = plt.subplots(figsize=(8, 3.5))
ax.bar([m[5:] for m in months], [monthly[m] / 1000 for m in months], color="#4c72b0")
ax.set(title="Monthly revenue, 2024", xlabel="month", ylabel="revenue (thousands)")
plt.show()
"""


def _plan(*statuses: str) -> dict:
    steps = ["Create sales.csv", "Sum revenue per month", "Plot monthly revenue"]
    return {"steps": [{"step": s, "status": st} for s, st in zip(steps, statuses, strict=True)]}


def _call(n: int, name: str, args: dict) -> dict:
    return {
        "id": f"call_demo_{n}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


TURNS = [
    {
        "role": "assistant",
        "content": "I'll make the data, aggregate it by month, then plot it.",
        "tool_calls": [
            _call(1, "update_plan", _plan("in_progress", "pending", "pending")),
            _call(2, "run_cell", {"code": MAKE_DATA}),
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            _call(3, "update_plan", _plan("done", "in_progress", "pending")),
            _call(4, "run_cell", {"code": AGGREGATE_WRONG}),
        ],
    },
    {
        "role": "assistant",
        "content": "The column is called `amount`, not `revenue`; fixing that.",
        "tool_calls": [_call(5, "run_cell", {"code": AGGREGATE_FIXED})],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            _call(6, "update_plan", _plan("done", "done", "in_progress")),
            _call(7, "run_cell", {"code": PLOT}),
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [_call(8, "update_plan", _plan("done", "done", "done"))],
    },
    {
        "role": "assistant",
        "content": (
            "Done. `sales.csv` holds 366 days of 2024 sales; the monthly totals are printed "
            "above and the bar chart shows revenue peaking in spring and dipping in autumn."
        ),
    },
]


async def main() -> None:
    out = Path(__file__).with_name("demo.ipynb")
    if out.exists():
        out.unlink()
    model = ReplayModel(TURNS, name="demo (model turns scripted by hand)", base_url="")
    with tempfile.TemporaryDirectory() as tmp:
        async with Sandbox(workdir=Path(tmp), limits=SandboxLimits(cell_timeout=60)) as sandbox:
            recorder = NotebookRecorder(out, session_id="demo")
            tools = ToolBox(sandbox, sandbox.workdir)
            loop = build_agent(model, sandbox, [recorder], AgentConfig(), tools=tools)
            finished = await loop.run(PROMPT)
        # The scratch workspace's name is an accident of this machine: record it as ".".
        out.write_text(out.read_text().replace(json.dumps(str(Path(tmp)))[1:-1], "."))
    print(f"{out}: {finished.status} after {finished.steps} steps")
    digest = hashlib.sha256(out.read_text(encoding="utf-8").encode("utf-8")).hexdigest()
    print(f"its SHA-256 for codeagent_jupyter/record/bundled.py (BUNDLED): {digest}")


if __name__ == "__main__":
    asyncio.run(main())
