"""First-cell time of ``codeagent run`` (``python bench/first_cell.py [--before DIR]``).

``codeagent run`` runs as a real process against the scripted model, whose first reply
waits ``--delays`` seconds (0 and 3 by default: an instant model, and one that thinks) and
then asks for one cell that writes the time it ran; the second reply answers. Measured from
the process's spawn, medians of ``--runs`` runs:

- request: the first model request reaches the model;
- ready: the first line on stderr, the sandbox's enforcement line (printed once the kernel
  is up, before any cell);
- cell: the first cell runs;
- slack: cell - max(request + delay, ready), what the first cell waits beyond the later
  of the model's reply and the sandbox (target: at most 100 ms).

``--start cold,zygote`` adds a row per start (``codeagent run --start``). The zygote is
the workspace's shared one: its rows run in one workspace, the first starts the zygote
(it imports the data stack before its first fork) and is shown apart, the next ones fork
from it as a user's next run would.

``--before DIR`` adds the same rows for the package in another checkout (e.g. a worktree
of the commit before a change), run in turn with this one so that a busy machine slows
both alike.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = Path(tempfile.gettempdir()) / f"codeagent-bench-runtime-{os.getpid()}"
"""The runs' Jupyter runtime folder: the zygotes they share live there, and end with it."""
sys.path.insert(0, str(ROOT))

from tests.scripted_model import ScriptedModelServer, delay, text, tool_calls  # noqa: E402

CELL = "import time\nopen('ran.txt', 'w').write(repr(time.time()))"
CLI = "import sys\nfrom codeagent_jupyter.cli.main import main\nsys.exit(main())"
"""``codeagent`` as the console script runs it, from whichever checkout is on the path."""


class Responder:
    """The scripted model: the first request waits ``delay`` then asks for the cell."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.first_request: float | None = None
        self._lock = threading.Lock()

    def __call__(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        with self._lock:
            if not any(m["role"] == "assistant" for m in messages):
                self.first_request = self.first_request or time.time()
                return delay(self.delay_s, tool_calls(("run_cell", {"code": CELL})))
            return text("done")


async def one_run(
    package: Path, delay_s: float, srv: ScriptedModelServer, start: str = "cold", ws: Path = Path()
) -> dict[str, float]:
    """One ``codeagent run``: the times of its first request, sandbox and cell (s). ``ws``:
    the workspace (a fresh one by default; a zygote is shared by the runs of one workspace,
    so its rows reuse one)."""
    responder = Responder(delay_s)
    srv.set_script(responder)
    with tempfile.TemporaryDirectory() as tmp:
        ws = ws if ws != Path() else Path(tmp)
        (ws / "ran.txt").unlink(missing_ok=True)
        env = {**os.environ, "OPENAI_API_KEY": "k", "PYTHONPATH": str(package)}
        env["JUPYTER_RUNTIME_DIR"] = str(RUNTIME)  # the bench's zygotes, not the user's
        argv = ["run", "go", "--model", "m", "--base-url", srv.url, "--workdir", str(ws)]
        argv += ["--start", start] if start != "cold" else []  # a "before" may not know it
        spawned = time.time()
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            CLI,
            *argv,
            cwd=package,
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stderr is not None
        first_line = await proc.stderr.readline()
        ready = time.time()
        rest = await proc.stderr.read()
        if await proc.wait() != 0:
            raise RuntimeError(f"codeagent run failed: {(first_line + rest).decode()[-2000:]}")
        cell = float((ws / "ran.txt").read_text())
    request = responder.first_request or spawned
    return {
        "request": request - spawned,
        "ready": ready - spawned,
        "cell": cell - spawned,
        "slack": cell - max(request + delay_s, ready),
    }


def _stop_zygotes() -> None:
    from codeagent_jupyter.sandbox.zygote_shared import FOLDER_NAME, stop_zygote

    for folder in (RUNTIME / FOLDER_NAME).glob("*"):
        stop_zygote(folder)


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


async def first_cell_table(
    delays: list[float],
    runs: int,
    before: Path | None = None,
    out: Any = None,
    starts: tuple[str, ...] = ("cold",),
) -> dict[str, Any]:
    """Print the Markdown table; returns the medians (and every run) by row."""
    packages = [("after", ROOT, start) for start in starts]
    packages += [("before", before.resolve(), "cold")] if before else []
    results: dict[str, list[dict[str, float]]] = {}
    with ScriptedModelServer() as srv, tempfile.TemporaryDirectory() as kept:
        RUNTIME.mkdir(mode=0o700, exist_ok=True)
        try:
            for delay_s in delays:
                _stop_zygotes()  # each delay's first zygote run starts one
                for i in range(runs + ("zygote" in starts)):
                    for label, package, start in packages:  # in turn: the load hits each alike
                        if start != "zygote" and i == runs:
                            continue
                        started = f", --start {start}" if len(starts) > 1 else ""
                        if start == "zygote":  # the first run starts the workspace's zygote
                            started += ", starting the zygote" if i == 0 else ", zygote running"
                        row = f"{label}{started}, reply after {delay_s:g} s"
                        ws = Path(kept) if start == "zygote" else Path()
                        measured = await one_run(package, delay_s, srv, start, ws)
                        results.setdefault(row, []).append(measured)
        finally:
            _stop_zygotes()
            shutil.rmtree(RUNTIME, ignore_errors=True)
    print(
        f"| codeagent run (median of {runs}) | first request | sandbox ready | first cell "
        "| slack |",
        file=out,
    )
    print("|---|---:|---:|---:|---:|", file=out)
    table = {}
    for row, measured in results.items():
        m = table[row] = medians(measured)
        cells = " | ".join(f"{m[k]:.2f} s" for k in ("request", "ready", "cell"))
        print(f"| {row} | {cells} | {m['slack'] * 1000:+.0f} ms |", file=out)
    print(file=out)
    print(
        "slack = first cell - max(first request + reply delay, sandbox ready); times from "
        "the process's spawn",
        file=out,
    )
    return {"medians": table, "runs": results}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--delays", default="0,3", help="seconds to the first reply, comma-separated"
    )
    parser.add_argument("--runs", type=int, default=5, help="runs per row")
    parser.add_argument("--before", type=Path, help="another checkout to compare with")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    parser.add_argument(
        "--start", default="cold", help="codeagent run's --start, comma-separated (cold,zygote)"
    )
    args = parser.parse_args()
    delays = [float(d) for d in args.delays.split(",")]
    starts = tuple(args.start.split(","))
    result = await first_cell_table(delays, args.runs, args.before, starts=starts)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
