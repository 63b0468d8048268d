"""Benchmark: many concurrent agent sessions through the server's HTTP/WebSocket API.

    python bench/server.py [--sessions 16] [--steps 10] [--pool 4]

Starts the scripted model (stand-in for the model; each session gets ``--steps`` run_cell
calls, then an answer) and a real ``jupyter server`` with the extension as a subprocess, runs
the sessions at once through REST + WebSocket, then runs the same sessions in-process the way
the CLI does (``build_agent`` + ``NotebookRecorder``, no server) for comparison. Reports:

- completion (every run answered, every session notebook holds all its cells and outputs);
- delivery latency: an event's creation in the loop → its arrival at the WebSocket client;
- per-step wall time (consecutive ``tool_call_finished`` events) via the server vs the CLI
  path at the same concurrency; the difference is the overhead the server adds per step;
- RSS of the server process and of each sandbox kernel (its whole process tree).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._server import Server, children, rss_kib, tree_rss  # noqa: E402
from bench._table import pct, table  # noqa: E402
from bench.notebook import bursts  # noqa: E402
from bench.notebook import responder as idle_responder  # noqa: E402
from tests.scripted_model import ScriptedModelServer, text, tool_calls  # noqa: E402


def responder(steps: int) -> Any:
    """Stateless script: ``steps`` run_cell calls (numbered by tool results so far), then text."""

    def turn(messages: list[dict[str, Any]]) -> dict[str, Any]:
        done = sum(1 for m in messages if m.get("role") == "tool")
        if done >= steps:
            return text("done")
        return tool_calls(("run_cell", {"code": f"v = {done} * 2\nprint('step', {done}, v)"}))

    return turn


# -- the server path ----------------------------------------------------------------------


async def run_server(args: argparse.Namespace, model_url: str, work: Path) -> dict[str, Any]:
    root = work / "server-root"
    root.mkdir()
    server = Server(root, work / "home", model_url, args.pool)
    await server.start()
    try:
        return await _drive(server, root, args)
    except Exception:
        log = (work / "home" / "server.log").read_text(errors="replace").splitlines()
        problems = [line for line in log if line.startswith(("[W", "[E", "[C"))]
        print("server log (warnings and errors):", *problems[-30:], sep="\n", file=sys.stderr)
        raise
    finally:
        server.stop()


async def _drive(server: Server, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    results = await asyncio.gather(*(server.session(i, args.steps) for i in range(args.sessions)))
    wall = time.perf_counter() - t0
    tree = children()
    assert server.proc is not None
    kernels = tree.get(server.proc.pid, [])
    kernel_rss = [tree_rss(pid, tree) for pid in kernels]
    server_rss = rss_kib(server.proc.pid)
    missing = check_notebooks(server.home / "data" / "codeagent" / "sessions", results, args.steps)
    delivery, step_delivery, steps, answered = [], [], [], 0
    for result in results:
        finished = [(t, e) for t, e in result["events"] if e["type"] == "tool_call_finished"]
        delivery += [t - e["time"] for t, e in result["events"]]
        step_delivery += [t - e["time"] for t, e in finished]
        steps += [b[0] - a[0] for a, b in itertools.pairwise(finished)]
        last = result["events"][-1][1] if result["events"] else {}
        answered += last.get("type") == "run_finished" and last.get("status") == "answered"
    return {
        "answered": answered,
        "missing": missing,
        "wall_s": wall,
        "create_s": [r["create_s"] for r in results],
        "delivery_s": delivery,
        "step_delivery_s": step_delivery,
        "step_s": steps,
        "server_rss_kib": server_rss,
        "kernel_rss_kib": kernel_rss,
    }


def check_notebooks(folder: Path, results: list[dict[str, Any]], steps: int) -> list[str]:
    """Every session notebook must be valid and hold each step's cell with its output."""
    problems = []
    for result in results:
        path = folder / f"{result['id']}.ipynb"
        try:
            nb = nbformat.read(path, as_version=4)
            nbformat.validate(nb)
        except Exception as e:
            problems.append(f"{result['id']}: {e}")
            continue
        cells = [c for c in nb.cells if c.cell_type == "code"]
        for i in range(steps):
            want = f"step {i} {i * 2}"
            found = any(
                want in "".join(o.get("text", "")) for c in cells for o in c.outputs if "text" in o
            )
            if not found:
                problems.append(f"{result['id']}: step {i} missing")
    return problems


# -- the CLI path (same loop, no server) ----------------------------------------------------


async def run_cli(args: argparse.Namespace, model_url: str, work: Path) -> dict[str, Any]:
    from codeagent_jupyter.config import AgentConfig
    from codeagent_jupyter.core.assembly import build_agent
    from codeagent_jupyter.models.openai_chat import OpenAIChatModel
    from codeagent_jupyter.record.recorder import NotebookRecorder
    from codeagent_jupyter.sandbox import Sandbox
    from codeagent_jupyter.tools import ToolBox

    root = work / "cli-root"
    root.mkdir()
    sandboxes = [Sandbox(workdir=root) for _ in range(args.sessions)]
    for chunk in range(0, len(sandboxes), 4):
        await asyncio.gather(*(sb.start() for sb in sandboxes[chunk : chunk + 4]))
    model = OpenAIChatModel("scripted", model_url, "unused")

    class Times:
        def __init__(self) -> None:
            self.finished: list[float] = []

        def emit(self, event: Any) -> None:
            if event.type == "tool_call_finished":
                self.finished.append(time.time())

    async def one(index: int, sandbox: Any) -> list[float]:
        times = Times()
        recorder = NotebookRecorder(root / f"cli-{index}.ipynb")
        tools = ToolBox(sandbox, root)
        loop = build_agent(model, sandbox, [recorder, times], AgentConfig(), tools=tools)
        await loop.run(f"session {index}")
        return [b - a for a, b in itertools.pairwise(times.finished)]

    try:
        t0 = time.perf_counter()
        per = await asyncio.gather(*(one(i, sb) for i, sb in enumerate(sandboxes)))
        wall = time.perf_counter() - t0
    finally:
        await asyncio.gather(*(sb.shutdown() for sb in sandboxes))
    return {"step_s": [s for steps in per for s in steps], "wall_s": wall}


async def demand_bursts(work: Path, n: int) -> list[tuple[str, ...]]:
    """The pool that follows demand (``c.CodeAgent.pool_max``): a first burst of creates
    teaches it, a second one should find sandboxes ready (``bench/notebook.py`` measures it
    the same way)."""
    with ScriptedModelServer(idle_responder) as idle_model:
        return await bursts(work, idle_model.url, n)


def ms(value: float) -> str:
    return f"{value * 1000:.1f}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--pool", type=int, default=4)
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    parser.add_argument(
        "--no-bursts",
        action="store_true",
        help="skip the two bursts of --sessions creates with a pool that follows demand",
    )
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="codeagent-bench-") as tmp,
        ScriptedModelServer(responder(args.steps)) as model,
    ):
        work = Path(tmp)
        server = await run_server(args, model.url, work)
        cli = await run_cli(args, model.url, work)
        burst_rows = [] if args.no_bursts else await demand_bursts(work, args.sessions)
    n = args.sessions
    kernels = server["kernel_rss_kib"]
    kernel_text = "n/a"
    if kernels:
        mean, top = statistics.mean(kernels) / 1024, max(kernels) / 1024
        kernel_text = f"{mean:.0f} / {top:.0f} MiB ({len(kernels)} kernels)"

    def p(values: list[float]) -> str:
        return f"{ms(pct(values, 0.5))} / {ms(pct(values, 0.95))} ms"

    walls = f"{server['wall_s']:.1f} / {cli['wall_s']:.1f} s"
    rows = [
        ("sessions answered", f"{server['answered']}/{n}"),
        ("notebook steps missing", str(len(server["missing"]))),
        ("wall time, all sessions: server / CLI path", walls),
        ("session create (POST to 201, kernel start included), p50 / p95", p(server["create_s"])),
        (
            "**step overhead**: step event made to WS client, p50 / p95",
            p(server["step_delivery_s"]),
        ),
        ("any event made to WS client, p50 / p95", p(server["delivery_s"])),
        ("step time via server, p50 / p95", p(server["step_s"])),
        ("step time, CLI path (same loop, no server), p50 / p95", p(cli["step_s"])),
        ("server RSS", f"{server['server_rss_kib'] / 1024:.0f} MiB"),
        ("RSS per sandbox, mean / max", kernel_text),
    ]
    print(
        f"\n{n} sessions x {args.steps} run_cell steps, pool {args.pool}, {os.cpu_count()} CPUs\n"
    )
    print(table(("measure", "value"), rows, "ll"))
    for problem in server["missing"][:10]:
        print("missing:", problem)
    if burst_rows:
        print(f"\nTwo bursts of {n} session creates, pool_size 1, pool_max {n} (target: second")
        print("burst p95 <= 1 s)\n")
        print(table(("burst", "sessions", "p50", "p95"), burst_rows))
    if args.json:
        args.json.write_text(json.dumps({"server": server, "cli": cli}, default=str))


if __name__ == "__main__":
    asyncio.run(main())
