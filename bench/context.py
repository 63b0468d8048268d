"""What the model is sent, and what the loop costs, over a 20-step session with heavy outputs.

Prints one table per measure, all from one run in this process:
- bytes sent per request, and the total against a naive transcript that would carry every
  output in full (target: ours <= 25 % of naive);
- the share of each request that repeats the previous request as a prefix, which is what a
  provider's prompt cache can reuse (target: >= 90 %);
- the loop's own time per step: model answer received -> tool result ready, minus the
  sandbox's execute time (target: <= 2 ms p50), without and with the notebook recorder;
- the bytes one image step adds to the request for a model that sees (a cell showing one
  matplotlib figure, and one showing three at 1600 px; target: <= 200 KB).

    python bench/context.py [--result-chars N]

``--result-chars`` sets how much of one tool result the model sees (default: the agent's
own). The prefix share falls as results grow (each request adds more new bytes), so
compare runs at the same setting.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._table import pct, table
from codeagent_jupyter import events as ev
from codeagent_jupyter.config import AgentConfig, SandboxLimits
from codeagent_jupyter.core.assembly import build_agent
from codeagent_jupyter.models.openai_chat import OpenAIChatModel
from codeagent_jupyter.record.recorder import NotebookRecorder
from codeagent_jupyter.sandbox import Sandbox
from codeagent_jupyter.tools import ToolBox
from tests.scripted_model import ScriptedModelServer, text, tool_calls

HEAVY = [
    "print('\\n'.join(f'row {i}: ' + 'x' * 80 for i in range(3000)))",  # ~270 KB of log
    "import numpy as np\nprint(np.arange(200_000))\nnp.random.seed(0)",
    "def f(n):\n    return f(n + 1)\nf(0)",  # RecursionError: a very long traceback
    "import matplotlib.pyplot as plt\nplt.plot(range(100)); plt.show()",
    "print('ok')",
]
STEPS = 20


class Collect:
    def __init__(self) -> None:
        self.events: list[ev.Event] = []

    def emit(self, event: ev.Event) -> None:
        self.events.append(event)


def script() -> list[dict]:
    turns = [tool_calls(("run_cell", {"code": HEAVY[i % len(HEAVY)]})) for i in range(STEPS - 1)]
    return [*turns, text("done")]


RESULT_CHARS = AgentConfig.result_chars


async def session(
    workdir: Path, with_recorder: bool
) -> tuple[list[dict], Collect, NotebookRecorder | None]:
    limits = SandboxLimits(output_bytes=50_000_000, cell_timeout=60)
    collect = Collect()
    with ScriptedModelServer(script()) as srv:
        model = OpenAIChatModel("bench", srv.url, "bench-key")
        async with Sandbox(workdir=workdir, limits=limits) as sandbox:
            sinks: list = [collect]
            recorder = NotebookRecorder(workdir / "session.ipynb") if with_recorder else None
            if recorder is not None:
                sinks.insert(0, recorder)
            config = AgentConfig(result_chars=RESULT_CHARS)
            tools = ToolBox(sandbox, sandbox.workdir)
            loop = build_agent(model, sandbox, sinks, config, tools=tools)
            await loop.run("run the heavy cells")
        await model.aclose()
        return list(srv.requests), collect, recorder


PLOTS = (
    "import matplotlib.pyplot as plt\nimport numpy as np\nnp.random.seed(0)\n"
    "plt.figure(figsize=(8, 4))\nplt.plot(np.random.randn(500).cumsum()); plt.show()",
    "import matplotlib.pyplot as plt\nimport numpy as np\nfor i in range(3):\n"
    "    plt.figure(figsize=(16, 8))\n    plt.scatter(*np.random.randn(2, 3000), s=4)\n"
    "    plt.show()",
)


async def image_steps(workdir: Path) -> list[int]:
    """Bytes each image step adds to the next request, with sight on."""
    turns = [tool_calls(("run_cell", {"code": code})) for code in PLOTS]
    with ScriptedModelServer([*turns, text("done")]) as srv:
        model = OpenAIChatModel("bench-vision", srv.url, "bench-key")
        async with Sandbox(workdir=workdir, limits=SandboxLimits(cell_timeout=60)) as sandbox:
            tools = ToolBox(sandbox, sandbox.workdir, vision=True)
            loop = build_agent(model, sandbox, [Collect()], AgentConfig(), tools=tools)
            await loop.run("plot")
        await model.aclose()
        sizes = [len(prompt_bytes(body)) for body in srv.requests]
    return [after - before for before, after in itertools.pairwise(sizes)]


def full_text(outputs: list[dict]) -> str:
    """What a naive agent would paste into the conversation: every output, in full."""
    parts = []
    for out in outputs:
        if out.get("output_type") == "stream":
            parts.append(out["text"])
        elif out.get("output_type") == "error":
            parts.append("\n".join(out.get("traceback", [])))
        else:
            parts.extend(str(v) for v in out.get("data", {}).values())
    return "".join(parts)


def prompt_bytes(body: dict) -> str:
    return json.dumps({"tools": body.get("tools"), "messages": body["messages"]})


def common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    step = 4096
    while i < n and a[i : i + step] == b[i : i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return min(i, n)


def overheads(collect: Collect) -> list[float]:
    received: dict[int, float] = {}
    result = []
    for e in collect.events:
        if isinstance(e, ev.AssistantMessage):
            received[e.step] = e.time
        elif isinstance(e, ev.ToolCallFinished):
            result.append((e.time - received[e.step] - e.duration_s) * 1000)
    return result


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        requests, collect, _ = await session(Path(tmp), with_recorder=False)
        _, recorded, recorder = await session(Path(tmp), with_recorder=True)
        assert recorder is not None
        saves = []
        for _ in range(20):  # one step's write, at the size the session ended with
            start = time.perf_counter()
            recorder.save()
            saves.append((time.perf_counter() - start) * 1000)
        notebook_kb = recorder.path.stat().st_size / 1024
        one_plot, three_plots = await image_steps(Path(tmp))
    full = {
        e.tool_call_id: full_text(e.outputs)
        for e in collect.events
        if isinstance(e, ev.ToolCallFinished)
    }
    per_request: list[tuple[object, ...]] = []
    sent_total = naive_total = 0
    shares = []
    reused_total = later_total = 0
    previous = ""
    for i, body in enumerate(requests):
        sent = prompt_bytes(body)
        naive = len(sent)
        for m in body["messages"]:
            if m["role"] == "tool":
                naive += len(json.dumps(full.get(m["tool_call_id"], ""))) - len(
                    json.dumps(m["content"])
                )
        share = common_prefix(previous, sent) / len(sent) if previous else float("nan")
        if previous:
            shares.append(share)
            reused_total += common_prefix(previous, sent)
            later_total += len(sent)
        previous = sent
        sent_total += len(sent)
        naive_total += naive
        per_request.append((i + 1, f"{len(sent):,}", f"{naive:,}", f"{share:.1%}"))
    ratio = sent_total / naive_total
    per_request.append(("total", f"{sent_total:,}", f"{naive_total:,}", ""))
    print(table(("request", "bytes sent", "naive bytes", "prefix reused"), per_request, "rrrr"))
    print()
    print(f"result_chars = {RESULT_CHARS}")
    rows: list[tuple[object, ...]] = [
        ("bytes sent / naive transcript", f"{ratio:.1%}", "<= 25%"),
        ("prefix reused, min over requests", f"{min(shares):.1%}", ">= 90%"),
        ("prefix reused, mean", f"{statistics.mean(shares):.1%}", ">= 90%"),
        ("prefix reused, bytes-weighted", f"{reused_total / later_total:.1%}", ">= 90%"),
    ]
    for label, sink in (("loop overhead", collect), ("loop overhead, recorder attached", recorded)):
        values = overheads(sink)
        p50_p95 = f"{statistics.median(values):.2f} / {pct(values, 0.95):.2f}"
        rows.append((f"{label}, p50 / p95 ms", p50_p95, "<= 2 ms p50"))
    rows.append(("an image step adds: one figure", f"{one_plot / 1000:,.0f} KB", "<= 200 KB"))
    rows.append(
        ("an image step adds: three 1600 px figures", f"{three_plots / 1000:,.0f} KB", "<= 200 KB")
    )
    rows.append(
        (
            f"recorder: one save of the final notebook ({notebook_kb:,.0f} KB), p50 / p95 ms",
            f"{statistics.median(saves):.2f} / {pct(saves, 0.95):.2f}",
            "(once per step)",
        )
    )
    print(table(("measure", "value", "target"), rows))


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--result-chars", type=int, default=AgentConfig.result_chars)
    RESULT_CHARS = cli.parse_args().result_chars
    asyncio.run(main())
