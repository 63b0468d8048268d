"""Measure the agent on the data-science task suite (``bench/tasks``), against any endpoint.

Each task runs in a fresh sandbox folder through the real agent loop, up to N at a time, and
its checker reads what the run left behind. ``--baseline one-shot`` runs the same tasks with
the same model asked once for a complete script, run once with no feedback: the ratio of the
two success rates is what the loop adds. ``--model recorded`` replays the hand-scripted
recordings in ``bench/tasks/recordings`` instead of calling a model (how CI proves the
checkers, offline). Every session notebook is kept in ``--out``, with ``results.json``.

    python bench/agent_eval.py --base-url http://127.0.0.1:8080/v1 --model local \\
        --tasks 'clean_*,bar_chart' --parallel 2 --baseline one-shot --out eval-out
    python bench/agent_eval.py --model recorded --recording wrong --tasks '*'

Exit codes: 0 the suite ran (whatever the success rate), 1 a run broke down, 2 bad usage.
Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import shutil
import statistics
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.tasks import Task, load_tasks
from bench.tasks._runner import Outcome, prepare, run_agent, run_one_shot
from codeagent_jupyter.config import SandboxLimits
from codeagent_jupyter.errors import CodeAgentError, ConfigError
from codeagent_jupyter.session_reader import load_session

MODES = ("agent", "one-shot")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be a positive whole number")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = _Parser(prog="agent_eval", description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="model name, or 'recorded' (no model)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    p.add_argument("--tasks", default="*", help="comma-separated globs of names or categories")
    p.add_argument("--parallel", type=_positive, default=1, help="tasks run at once (default 1)")
    p.add_argument("--out", type=Path, default=Path("agent-eval"), help="results folder")
    p.add_argument("--baseline", choices=("one-shot",), help="also run the one-shot baseline")
    p.add_argument(
        "--recording",
        choices=("solved", "wrong"),
        default="solved",
        help="with --model recorded: which recordings to replay",
    )
    p.add_argument("--max-output-tokens", type=_positive, default=2048)
    p.add_argument("--max-steps", type=_positive, help="cap every task's step budget at this")
    p.add_argument("--request-timeout", type=_positive, default=600, help="seconds per reply")
    p.add_argument("--retries", type=int, default=4, help="retries of a failed model request")
    p.add_argument("--cell-timeout", type=_positive, default=120, help="seconds per cell")
    p.add_argument(
        "--shared-kernel",
        action="store_true",
        help="one kernel per worker, reset between tasks (faster; for replays)",
    )
    p.add_argument(
        "--isolation",
        choices=("auto", "none"),
        default="auto",
        help="none: allow an unconfined sandbox where the machine cannot isolate",
    )
    args = p.parse_args(argv)
    if args.model == "recorded" and args.baseline:
        p.error("--baseline one-shot needs a live model, not --model recorded")
    if args.model != "recorded" and not (args.base_url or os.environ.get("OPENAI_BASE_URL")):
        p.error("--base-url is required (or set $OPENAI_BASE_URL)")
    return args


def model_factory(args: argparse.Namespace) -> Any:
    """``task -> Model``: a replay of the task's recording, or the live endpoint."""
    if args.model == "recorded":
        from codeagent_jupyter.models.replay import ReplayModel

        def recorded(task: Task) -> Any:
            path = task.recording(args.recording)
            if not path.is_file():
                raise ConfigError(f"no recording {path.name} for task {task.name}")
            turns = [m for run in load_session(path).turns for m in run]
            return ReplayModel(turns, name=f"recorded: {path.name}", base_url="")

        return recorded
    from codeagent_jupyter.models.openai_chat import OpenAIChatModel, resolve_settings

    name, base_url, key = resolve_settings(args.model, args.base_url)
    return lambda task: OpenAIChatModel(
        name,
        base_url,
        key,
        max_output_tokens=args.max_output_tokens,
        timeout=args.request_timeout,
        max_retries=args.retries,
    )


class Runner:
    """Runs (task, mode) jobs up to ``parallel`` at a time, each in its own folder."""

    def __init__(self, args: argparse.Namespace, jobs: list[tuple[Task, str]]) -> None:
        self.args, self.jobs = args, jobs
        self.make_model = model_factory(args)
        self.limits = SandboxLimits(cell_timeout=float(args.cell_timeout))
        self.root = (args.out / "workspaces").resolve()
        self.kernels: asyncio.Queue[Any] = asyncio.Queue()
        self.done = 0

    def _sandbox(self, workdir: Path) -> Any:
        from codeagent_jupyter.sandbox import Sandbox

        unconfined = self.args.isolation == "none"
        return Sandbox(workdir=workdir, limits=self.limits, allow_unconfined=unconfined)

    async def run(self) -> list[Outcome]:
        self.root.mkdir(parents=True, exist_ok=True)
        workers = min(self.args.parallel, len(self.jobs))
        shared = []
        try:
            if self.args.shared_kernel:
                for _ in range(workers):
                    shared.append(await self._sandbox(self.root).__aenter__())
                    self.kernels.put_nowait(shared[-1])
            gate = asyncio.Semaphore(workers)
            return list(await asyncio.gather(*(self._job(gate, t, m) for t, m in self.jobs)))
        finally:
            for sandbox in shared:
                await sandbox.__aexit__(None, None, None)

    async def _job(self, gate: asyncio.Semaphore, task: Task, mode: str) -> Outcome:
        async with gate:
            workdir = self.root / mode / task.name
            shutil.rmtree(workdir, ignore_errors=True)
            workdir.mkdir(parents=True)
            task.setup(workdir)
            notebook = (self.args.out / f"{task.name}.{mode}.ipynb").resolve()
            notebook.unlink(missing_ok=True)
            model = self.make_model(task)
            try:
                if self.args.shared_kernel:
                    sandbox = await self.kernels.get()
                    try:
                        await prepare(sandbox, workdir, shared=True)
                        outcome = await self._one(mode, task, model, sandbox, workdir, notebook)
                    finally:
                        self.kernels.put_nowait(sandbox)
                else:
                    async with self._sandbox(workdir) as sandbox:
                        outcome = await self._one(mode, task, model, sandbox, workdir, notebook)
            finally:
                if hasattr(model, "aclose"):
                    await model.aclose()
            self.done += 1
            verdict = "passed" if outcome.passed else f"FAILED ({outcome.reason})"
            print(f"[{self.done}/{len(self.jobs)}] {task.name} {mode}: {verdict}", file=sys.stderr)
            return outcome

    @staticmethod
    async def _one(mode: str, task: Task, *rest: Any) -> Outcome:
        return await (run_agent if mode == "agent" else run_one_shot)(task, *rest)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95 % Wilson score interval for k successes in n: honest for small n and 0 or n."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def table(outcomes: list[Outcome]) -> str:
    head = f"{'task':<20} {'category':<13} {'mode':<8} {'passed':<6} {'steps':>5} "
    head += f"{'tokens':>9} {'wall s':>7} {'recovered':>9}  reason"
    lines = [head, "-" * len(head)]
    for o in outcomes:
        tokens = f"{'~' if o.estimated else ''}{o.tokens:,}"
        lines.append(
            f"{o.task:<20} {o.category:<13} {o.mode:<8} {'yes' if o.passed else 'no':<6} "
            f"{o.steps:>5} {tokens:>9} {o.wall_s:>7.1f} {o.recovered:>9}  {o.reason[:70]}"
        )
    return "\n".join(lines)


def summary(outcomes: list[Outcome]) -> tuple[str, dict[str, Any]]:
    lines, data = [], {}
    for mode in MODES:
        runs = [o for o in outcomes if o.mode == mode]
        if not runs:
            continue
        solved = [o for o in runs if o.passed]
        low, high = wilson(len(solved), len(runs))
        med_tokens = statistics.median(o.tokens for o in solved) if solved else None
        med_time = statistics.median(o.wall_s for o in solved) if solved else None
        data[mode] = {
            "solved": len(solved),
            "runs": len(runs),
            "rate": len(solved) / len(runs),
            "ci95": [low, high],
            "median_tokens_solved": med_tokens,
            "median_wall_s_solved": med_time,
        }
        medians = (
            f"median per solved task: {med_tokens:,.0f} tokens, {med_time:.1f} s"
            if solved
            else "no task solved"
        )
        lines.append(
            f"{mode:<8}: {len(solved)}/{len(runs)} solved = {len(solved) / len(runs):.0%} "
            f"(95% CI {low:.0%}-{high:.0%}); {medians}"
        )
    if len(data) == 2:
        agent, base = data["agent"]["rate"], data["one-shot"]["rate"]
        ratio = agent / base if base else None
        data["ratio"] = ratio
        shown = f"{ratio:.2f}x" if ratio is not None else "n/a (the baseline solved none)"
        lines.append(f"agent / one-shot success rate: {shown}")
    return "\n".join(lines), data


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tasks = load_tasks(args.tasks)
    if not tasks:
        print(f"agent_eval: error: no task matches {args.tasks!r}", file=sys.stderr)
        return 2
    if args.max_steps:
        tasks = [replace(t, max_steps=min(t.max_steps, args.max_steps)) for t in tasks]
    modes = ["agent", *(["one-shot"] if args.baseline else [])]
    jobs = [(t, m) for m in modes for t in tasks]
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        outcomes = asyncio.run(Runner(args, jobs).run())
    except ConfigError as exc:
        print(f"agent_eval: error: {exc}", file=sys.stderr)
        return 2
    except (CodeAgentError, OSError) as exc:
        print(f"agent_eval: error: {exc}", file=sys.stderr)
        return 1
    text, data = summary(outcomes)
    print(table(outcomes))
    print()
    print(text)
    results = {
        "model": args.model,
        "summary": data,
        "runs": [{**asdict(o), "notebook": str(o.notebook or "")} for o in outcomes],
    }
    (args.out / "results.json").write_text(json.dumps(results, indent=2))
    print(f"Notebooks and results.json in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
