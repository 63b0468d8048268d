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
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.scripted_model import ScriptedModelServer, text, tool_calls  # noqa: E402

TOKEN = "bench-token"


def responder(steps: int) -> Any:
    """Stateless script: ``steps`` run_cell calls (numbered by tool results so far), then text."""

    def turn(messages: list[dict[str, Any]]) -> dict[str, Any]:
        done = sum(1 for m in messages if m.get("role") == "tool")
        if done >= steps:
            return text("done")
        return tool_calls(("run_cell", {"code": f"v = {done} * 2\nprint('step', {done}, v)"}))

    return turn


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
            tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def tree_rss(pid: int, tree: dict[int, list[int]]) -> int:
    return rss_kib(pid) + sum(tree_rss(c, tree) for c in tree.get(pid, []))


# -- the server path ----------------------------------------------------------------------


class Server:
    def __init__(self, root: Path, home: Path, model_url: str, pool: int) -> None:
        self.root, self.home = root, home
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config_dir = home / "config"
        config_dir.mkdir(parents=True, exist_ok=True)
        off = ["jupyterlab", "jupyter_lsp", "notebook_shim", "jupyter_server_terminals"]
        extensions = {**dict.fromkeys(off, False), "codeagent_jupyter": True}
        config = {
            "ServerApp": {"jpserver_extensions": extensions},
            "CodeAgent": {
                "model": "scripted",
                "base_url": model_url,
                "pool_size": pool,
                "max_sessions_per_user": 1000,
            },
        }
        (config_dir / "jupyter_server_config.json").write_text(json.dumps(config))
        self.env = {
            **os.environ,
            "HOME": str(home),
            "JUPYTER_CONFIG_DIR": str(config_dir),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
            "JUPYTER_DATA_DIR": str(home / "data"),  # where the server keeps its sessions
        }
        self.base = f"http://127.0.0.1:{self.port}/codeagent/api"
        self.proc: subprocess.Popen[bytes] | None = None
        self.http = AsyncHTTPClient(max_clients=64)

    async def start(self) -> None:
        argv = [sys.executable, "-m", "jupyter_server", f"--port={self.port}", "--ip=127.0.0.1"]
        argv += ["--no-browser", "--allow-root", f"--ServerApp.root_dir={self.root}"]
        argv += [f"--IdentityProvider.token={TOKEN}"]
        log = (self.home / "server.log").open("wb")
        self.proc = subprocess.Popen(argv, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                await self.call("GET", "health")  # also starts (and waits for) the pool
                return
            except (ConnectionError, OSError):
                await asyncio.sleep(0.2)
        raise RuntimeError("server did not start")

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        request = HTTPRequest(
            f"{self.base}/{path}",
            method=method,
            body=json.dumps(body) if body is not None else None,
            headers={"Authorization": f"token {TOKEN}"},
            request_timeout=300,
        )
        response = await self.http.fetch(request)
        return json.loads(response.body or b"null")

    async def session(self, index: int, steps: int) -> dict[str, Any]:
        started = time.perf_counter()
        info = await self.call("POST", "sessions", {"prompt": f"session {index}"})
        created = time.perf_counter() - started
        url = f"ws://127.0.0.1:{self.port}/codeagent/api/sessions/{info['id']}/events?since=0"
        ws = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {TOKEN}"}))
        events = []
        while True:
            message = await ws.read_message()
            if message is None:
                break
            received = time.time()
            event = json.loads(message)
            events.append((received, event))
            if event["type"] == "run_finished":
                break
        ws.close()
        return {"id": info["id"], "create_s": created, "events": events}

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()


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
    from bench.notebook import bursts
    from bench.notebook import responder as idle_responder

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
        return f"{ms(percentile(values, 50))} / {ms(percentile(values, 95))} ms"

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
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    for problem in server["missing"][:10]:
        print("missing:", problem)
    if burst_rows:
        print(f"\nTwo bursts of {n} session creates, pool_size 1, pool_max {n} (target: second")
        print("burst p95 <= 1 s)\n\n| burst | sessions | p50 | p95 |\n|---|---:|---:|---:|")
        for row in burst_rows:
            print("| " + " | ".join(row) + " |")
    if args.json:
        args.json.write_text(json.dumps({"server": server, "cli": cli}, default=str))


if __name__ == "__main__":
    asyncio.run(main())
