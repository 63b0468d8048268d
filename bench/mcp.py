"""MCP benchmark: the round trip of ``run_cell("1+1")`` through MCP (stdio and streamable HTTP,
the official SDK's client) against the same call through our own tool runner (what the agent
loop does for a tool call), and how long a new MCP session waits for its sandbox from the
server's pool.

Run: ``python bench/mcp.py [--calls 200] [--sessions 5] [--pause-ms 0]``; or ``--first N
[--before DIR] [--start cold,zygote]``: process start to the first ``run_cell`` result of
``codeagent mcp`` over stdio, N runs (against another checkout in turn with ``--before``; with
``zygote``, one more run first, which starts the shared zygote the others fork from). Prints
Markdown tables measured in this run. Our own call is measured twice: on a bare bus (the call
alone) and on a recorded session's bus (snapshot, then the save and signature of each step, as
``codeagent run`` and the server's sessions have it). The server snapshots the workspace after
every call (no setting turns that off for MCP sessions), so stdio is measured both ways: stdio
with snapshots against HTTP is the cost of the transport alone. The HTTP column runs a real
``jupyter server`` (token auth, ``pool_size=2``) as a child process; the acquire times are what
the server logs for each new MCP session. ``--pause-ms``: the client's pause before each call,
where an agent's model thinks (the server's work after a reply falls there).
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, and its name would hide
# the ``mcp`` package.
if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)

import argparse
import asyncio
import os
import re
import secrets
import socket
import statistics
import subprocess
import tempfile
import time
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import Implementation

from codeagent_jupyter.core.bus import EventBus
from codeagent_jupyter.core.runner import ToolRunner
from codeagent_jupyter.core.toolset import ToolContext
from codeagent_jupyter.sandbox import Sandbox, SandboxLimits
from codeagent_jupyter.tools import ToolBox

LIMITS = SandboxLimits(memory_mb=1024, cell_timeout=30)
CODE = {"code": "1+1"}
INFO = Implementation(name="bench", version="1")


async def _guard(awaitable: Any, interruptible: bool) -> Any:
    return await awaitable


PAUSE_S = 0.0
"""The client's pause before each call (``--pause-ms``): an agent's model thinks between
two calls, and what the server does after a reply (snapshot, recording) falls there."""


async def in_loop(work: Path, n: int, *, recorded: bool = False) -> list[float]:
    """Our own tool call as the agent loop makes it (``AgentLoop._call_tool``): the runner
    and the standard tools, then the call's ``ToolCallFinished`` delivered on the bus.

    ``recorded=False``: a bare bus (the call alone, the strictest baseline). ``True``: the
    bus of a recorded session, as ``codeagent run`` and the server's sessions have it: the
    workspace snapshot, then the notebook recorder, which saves and signs each step."""
    from codeagent_jupyter import events as ev
    from codeagent_jupyter.cli.wiring import snapshot_sink
    from codeagent_jupyter.record.notary import Notary
    from codeagent_jupyter.record.recorder import NotebookRecorder

    async with Sandbox(workdir=work, limits=LIMITS) as sandbox:
        bus = EventBus(keep=False)
        if recorded:
            notary = Notary(work.parent / "notary")
            out = work.parent / "recorded.ipynb"
            recorder = NotebookRecorder(out, session_id="bench", on_saved=notary.saved)
            bus.subscribe(snapshot_sink(work, recorder).emit)
            bus.subscribe(recorder.emit)
            bus.publish(ev.RunStarted, prompt="bench", run_index=0, model="bench")
        runner = ToolRunner(ToolBox(sandbox, work), bus, _guard, approval={}, approver=None)
        times = []
        for i in range(n + 5):
            await asyncio.sleep(PAUSE_S)
            call = {"name": "run_cell", "arguments": '{"code": "1+1"}'}
            turn = {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": call}
            ]}  # fmt: skip
            bus.publish(ev.AssistantMessage, step=i + 1, message=turn)  # the model's turn
            t = time.perf_counter()
            ctx = ToolContext(step=i + 1, tool_call_id=f"c{i}", publish=bus.publish)
            outcome, _ = await runner.run(ctx, "run_cell", CODE)
            finished = ev.ToolCallFinished.from_outcome
            bus.deliver(finished(outcome, step=i + 1, tool_call_id=f"c{i}", name="run_cell"))
            times.append(time.perf_counter() - t)
        return times[5:]


async def over(client: Client, n: int) -> list[float]:
    times = []
    async with client as c:
        for _ in range(n + 5):
            await asyncio.sleep(PAUSE_S)
            t = time.perf_counter()
            result = await c.call_tool("run_cell", CODE)
            times.append(time.perf_counter() - t)
            assert not result.is_error, result
    return times[5:]


def stdio_client(
    work: Path, snapshots: bool = False, package: Path | None = None, start: str = "cold"
) -> Client:
    """``codeagent mcp`` over stdio; ``package``: the checkout to run it from; ``start``:
    its ``--start`` (a zygote's runtime folder is the bench's own, in ``work``)."""
    args = ["-m", "codeagent_jupyter.cli", "mcp", "--workdir", str(work)]
    args += [] if snapshots else ["--no-snapshots"]
    args += [] if start == "cold" else ["--start", start]
    env = dict(os.environ)
    env["JUPYTER_RUNTIME_DIR"] = str(work.parent / "runtime")
    if package is not None:
        env["PYTHONPATH"] = str(package)
    server = StdioServerParameters(command=sys.executable, args=args, env=env, cwd=package)
    return Client(server, client_info=INFO, read_timeout_seconds=120)


async def first_result(
    work: Path, runs: int, before: Path | None, starts: list[str]
) -> dict[str, list[float]]:
    """Seconds from spawning ``codeagent mcp`` to the first ``run_cell`` result, per run
    (this checkout, and ``before`` in turn with it when given; each of ``starts`` in turn).
    With ``zygote`` the first run starts this user's shared zygote (timed apart) and the
    next ones fork from it, as a user's next ``codeagent mcp`` would."""
    packages = [("after", Path(__file__).resolve().parents[1])]
    packages += [("before", before.resolve())] if before else []
    times: dict[str, list[float]] = {}
    try:
        for i in range(runs + ("zygote" in starts)):
            for label, package in packages:
                for start in starts:
                    name = f"{label}, --start {start}"
                    if start == "zygote":
                        name += ", starting the zygote" if i == 0 else ", zygote running"
                    elif i == runs:
                        continue
                    t = time.perf_counter()
                    async with stdio_client(work, package=package, start=start) as c:
                        result = await c.call_tool("run_cell", CODE)
                        times.setdefault(name, []).append(time.perf_counter() - t)
                    assert not result.is_error, result
    finally:
        from codeagent_jupyter.sandbox.zygote_shared import stop_zygote

        for folder in (work.parent / "runtime" / "codeagent-z").glob("*"):
            stop_zygote(folder)
    return times


def http_client(url: str, token: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"token {token}"}, timeout=120)
    transport = streamable_http_client(url, http_client=http)
    return Client(transport, client_info=INFO, mode="legacy", read_timeout_seconds=120)


async def raw_http(url: str, token: str, n: int) -> list[float]:
    """The same calls as plain JSON-RPC POSTs on one kept-alive connection (httpx, no MCP
    client): what the server's side of the transport costs, without the SDK client's."""
    base = {"Authorization": f"token {token}", "Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(headers=base, timeout=120) as http:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": INFO.model_dump(),
        }
        reply = await http.post(
            url, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}
        )
        reply.raise_for_status()
        session = {
            "mcp-session-id": reply.headers["mcp-session-id"],
            "mcp-protocol-version": reply.json()["result"]["protocolVersion"],
        }
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        (await http.post(url, json=note, headers=session)).raise_for_status()
        times = []
        for i in range(n + 5):
            await asyncio.sleep(PAUSE_S)
            call = {"name": "run_cell", "arguments": CODE}
            t = time.perf_counter()
            reply = await http.post(
                url, json={"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": call},
                headers=session,
            )  # fmt: skip
            result = reply.json()["result"]
            times.append(time.perf_counter() - t)
            assert not result.get("isError"), result
        await http.delete(url, headers=session)
    return times[5:]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def with_server(
    root: Path, calls: int, sessions: int
) -> tuple[list[float], list[float], list[float]]:
    """HTTP round trips (the SDK's client, then plain POSTs), and the acquire times of
    ``sessions`` new MCP sessions."""
    token, port = secrets.token_hex(16), free_port()
    log, runtime = root.parent / "server.log", root.parent / "runtime"
    argv = [
        sys.executable, "-m", "jupyter_server", f"--port={port}", "--ip=127.0.0.1",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        "--CodeAgent.pool_size=2", "--CodeAgent.model=none", "--ServerApp.open_browser=False",
        "--allow-root", "--MCPExtensionApp.mcp_port=0",
    ]  # fmt: skip
    env = {  # the server's sessions and signatures stay in the bench's temporary folder
        **os.environ,
        "JUPYTER_RUNTIME_DIR": str(runtime),
        "JUPYTER_DATA_DIR": str(root.parent / "data"),
        "JUPYTER_CONFIG_DIR": str(root.parent / "config"),
    }
    with log.open("w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        url = f"http://127.0.0.1:{port}/codeagent/mcp"
        for _ in range(600):
            if "MCP at /codeagent/mcp" in log.read_text():
                break
            await asyncio.sleep(0.2)
        times = await over(http_client(url, token), calls)
        raw = await raw_http(url, token, calls)
        for _ in range(sessions):
            await asyncio.sleep(8)  # the pool refills between sessions
            async with http_client(url, token) as c:
                await c.call_tool("run_cell", CODE)
        found = re.findall(r"sandbox in ([0-9.]+) ms", log.read_text())
        return times, raw, [float(v) / 1000 for v in found[2:]]  # the first two: the calls
    except BaseException:
        print(log.read_text()[-4000:], file=sys.stderr)
        raise
    finally:
        proc.terminate()
        proc.wait(60)


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.2f}"


def p95(values: list[float]) -> str:
    ordered = sorted(values)
    return f"{ordered[round(0.95 * (len(ordered) - 1))] * 1000:.2f}"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument(
        "--pause-ms", type=float, default=0.0, help="the client's pause before each call"
    )
    parser.add_argument(
        "--first", type=int, default=0, help="only time process start -> first run_cell, N runs"
    )
    parser.add_argument("--before", type=Path, help="with --first: another checkout to compare")
    parser.add_argument(
        "--start", default="cold", help="with --first: the --start values to time, e.g. cold,zygote"
    )
    args = parser.parse_args()
    if args.first:
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "work").mkdir()
            starts = args.start.split(",")
            firsts = await first_result(Path(tmp) / "work", args.first, args.before, starts)
        print("| codeagent mcp | runs | spawn -> first run_cell result (median) |")
        print("|---|---:|---:|")
        for label, values in firsts.items():
            print(f"| {label} | {len(values)} | {statistics.median(values):.2f} s |")
        return
    global PAUSE_S
    PAUSE_S = args.pause_ms / 1000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = await in_loop(root, args.calls)
        (root / "recorded").mkdir()
        recorded = await in_loop(root / "recorded", args.calls, recorded=True)
        stdio = await over(stdio_client(root), args.calls)
        stdio_snap = await over(stdio_client(root, snapshots=True), args.calls)
        (root / "served").mkdir()
        http, raw, acquire = await with_server(root / "served", args.calls, args.sessions)
    print(f"Calls {args.calls}, client pause before each {args.pause_ms:g} ms.\n")
    print('| `run_cell("1+1")` round trip | median ms | p95 ms | median over the loop\'s |')
    print("|---|---|---|---|")
    rows = (
        ("our tool call (loop), bare bus", base),
        ("our tool call (loop), recorded session (snapshot, save, signature)", recorded),
        ("MCP stdio", stdio),
        ("MCP stdio, snapshots (as the server)", stdio_snap),
        ("MCP HTTP (snapshots: the server takes them)", http),
        ("HTTP, plain JSON-RPC POSTs (the server's share of it)", raw),
    )
    for label, values in rows:
        extra = statistics.median(values) - statistics.median(base)
        print(f"| {label} | {ms(values)} | {p95(values)} | {extra * 1000:+.2f} |")
    print()
    print("| new MCP session: sandbox from the pool | median ms | max ms | sessions |")
    print("|---|---|---|---|")
    if acquire:
        print(f"| acquire | {ms(acquire)} | {max(acquire) * 1000:.2f} | {len(acquire)} |")


if __name__ == "__main__":
    asyncio.run(main())
