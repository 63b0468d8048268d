"""Measure the agent on the data-science task suite (``bench/tasks``), against any endpoint.

Each task runs in a fresh sandbox folder through the real agent loop, up to N at a time, and
its checker reads what the run left behind. ``--baseline one-shot`` runs the same tasks with
the same model asked once for a complete script, run once with no feedback: the ratio of the
two success rates is what the loop adds. ``--model recorded`` replays the hand-scripted
recordings in ``bench/tasks/recordings`` instead of calling a model (how CI proves the
checkers, offline); with ``--baseline one-shot`` it replays each task's naive script (the
hard tier's ``NAIVE``) as the one-shot reply. ``--tier`` picks the easy suite (the default),
the hard tier, or both. Every session notebook is kept in ``--out``, with ``results.json``.

    python bench/agent_eval.py --base-url http://127.0.0.1:8080/v1 --model local \\
        --tasks 'clean_*,bar_chart' --parallel 2 --baseline one-shot --out eval-out
    python bench/agent_eval.py --model recorded --recording wrong --tasks '*'
    python bench/agent_eval.py --model recorded --tier hard --baseline one-shot

Exit codes: 0 the suite ran (whatever the success rate), 1 a run broke down, 2 bad usage.
Errors are one line on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codeagent_jupyter.util.quick_start import skip_iri_grammar

skip_iri_grammar()  # before anything imports jsonschema: ~3 s of CPU at every start

from bench.tasks import TIERS, Task, load_tasks  # noqa: E402
from bench.tasks._report import summary, table, wilson  # noqa: E402
from bench.tasks._runner import Outcome, prepare, run_agent, run_one_shot  # noqa: E402
from codeagent_jupyter.config import SandboxLimits  # noqa: E402
from codeagent_jupyter.errors import CodeAgentError, ConfigError  # noqa: E402
from codeagent_jupyter.record.reader import load_session  # noqa: E402

__all__ = ["main", "summary", "table", "wilson"]


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
    p.add_argument(
        "--tier",
        choices=(*TIERS, "all"),
        default="easy",
        help="which tier of the suite --tasks picks from (default: easy, the original suite)",
    )
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
    if args.model != "recorded" and not (args.base_url or os.environ.get("OPENAI_BASE_URL")):
        p.error("--base-url is required (or set $OPENAI_BASE_URL)")
    return args


def no_naive_script(args: argparse.Namespace, tasks: list[Task]) -> str | None:
    """Why a recorded baseline cannot run: it replays naive scripts, and some task has none."""
    if args.model != "recorded" or not args.baseline:
        return None
    missing = [t.name for t in tasks if not t.naive]
    if not missing:
        return None
    names = ", ".join(missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
    return (
        f"--baseline one-shot with --model recorded replays each task's naive script, and "
        f"{names} {'has' if len(missing) == 1 else 'have'} none: their baseline needs a live "
        f"model (--tier hard has a naive script for every task)"
    )


def naive_reply(task: Task) -> str:
    """The one-shot reply a recorded baseline serves: the task's naive script, fenced."""
    return (
        f"The script a model writes blind for {task.name}, from the request and the file "
        f"list alone.\n```python\n{task.naive}\n```"
    )


def model_factory(args: argparse.Namespace) -> Any:
    """``(task, mode) -> Model``: a replay of the task's recording (or, for the one-shot
    baseline, of its naive script), or the live endpoint."""
    if args.model == "recorded":
        from codeagent_jupyter.models.replay import ReplayModel

        def recorded(task: Task, mode: str) -> Any:
            if mode == "one-shot":
                turn = {"role": "assistant", "content": naive_reply(task)}
                return ReplayModel([turn], name=f"recorded: {task.name} naive script", base_url="")
            path = task.recording(args.recording)
            if not path.is_file():
                raise ConfigError(f"no recording {path.name} for task {task.name}")
            turns = [m for run in load_session(path).turns for m in run]
            return ReplayModel(turns, name=f"recorded: {path.name}", base_url="")

        return recorded
    from codeagent_jupyter.models.openai_chat import OpenAIChatModel, resolve_settings

    name, base_url, key = resolve_settings(args.model, args.base_url)
    return lambda task, mode: OpenAIChatModel(
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

    def _sandbox(self, workdir: Path, task: Task | None = None) -> Any:
        """A sandbox with the run's limits, or the task's own where it has them."""
        from codeagent_jupyter.sandbox import Sandbox

        limits = replace(self.limits, **task.limits) if task is not None else self.limits
        unconfined = self.args.isolation == "none"
        return Sandbox(workdir=workdir, limits=limits, allow_unconfined=unconfined)

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
            model = self.make_model(task, mode)
            try:
                # A task with limits of its own (a memory budget) never borrows a pool kernel.
                if self.args.shared_kernel and not task.limits:
                    sandbox = await self.kernels.get()
                    try:
                        await prepare(sandbox, workdir, shared=True)
                        outcome = await self._one(mode, task, model, sandbox, workdir, notebook)
                    finally:
                        self.kernels.put_nowait(sandbox)
                else:
                    async with self._sandbox(workdir, task) as sandbox:
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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    tasks = load_tasks(args.tasks, args.tier)
    if not tasks:
        elsewhere = sorted({t.tier for t in load_tasks(args.tasks)})
        hint = f" in the {args.tier} tier (try --tier {elsewhere[0]})" if elsewhere else ""
        print(f"agent_eval: error: no task matches {args.tasks!r}{hint}", file=sys.stderr)
        return 2
    refused = no_naive_script(args, tasks)
    if refused:
        print(f"agent_eval: error: {refused}", file=sys.stderr)
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
        "tier": args.tier,
        "summary": data,
        "runs": [{**asdict(o), "notebook": str(o.notebook or "")} for o in outcomes],
    }
    (args.out / "results.json").write_text(json.dumps(results, indent=2))
    print(f"Notebooks and results.json in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
