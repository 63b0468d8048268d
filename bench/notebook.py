"""Benchmark: working on the user's notebook: preloaded libraries and ``--with`` uploads.

    python bench/notebook.py [--repeat 3] [--sizes 1,100,500] [--burst 16]

Runs a real ``jupyter server`` with the extension (subprocess, pool of 1) against the
scripted model and prints two tables:

- **first cell**: from ``POST /sessions`` to the first cell's output on the WebSocket, for a
  ``1+1`` cell and for ``import pandas; import matplotlib.pyplot`` — with ``preload`` off and
  on. Each session takes a sandbox from the pool, which refills before the next one.
- **--with**: for a DataFrame of each size (MB in memory): serializing it as the user's
  kernel does (``transfer.serialize``), the upload (``POST /uploads``), and the load into
  the sandbox (``POST /sessions`` with the upload, minus the same call without one).
- **bursts**: ``--burst`` concurrent session creates, twice, with ``pool_size=1`` and
  ``pool_max=--burst``: the first burst finds one started sandbox, the second finds the
  pool grown to what the first one used.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench._server import TOKEN, Server  # noqa: E402
from bench._table import pct, table  # noqa: E402
from codeagent_jupyter.widget.client import AgentClient, ServerInfo  # noqa: E402
from codeagent_jupyter.widget.transfer import serialize  # noqa: E402
from tests.scripted_model import ScriptedModelServer, text, tool_calls  # noqa: E402

CELLS = {
    "raw": "1+1",
    "imports": "import pandas as pd\nimport matplotlib.pyplot as plt\nprint(pd.__name__)",
    "idle": "",
}


def responder(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """One cell, chosen by the request's last word, then an answer."""
    if any(m.get("role") == "tool" for m in messages):
        return text("done")
    word = str(messages[1]["content"]).split()[-1]
    code = CELLS.get(word, "")
    return tool_calls(("run_cell", {"code": code})) if code else text("nothing to run")


class Bench:
    def __init__(
        self, work: Path, model_url: str, preload: list[str], max_mb: int, pool_max: int = 1
    ) -> None:
        root = work / "root"
        root.mkdir(parents=True)
        self.server = Server(root, work / "home", model_url, pool=1)
        config_file = work / "home" / "config" / "jupyter_server_config.json"
        config = json.loads(config_file.read_text())
        config["CodeAgent"] |= {
            "preload": preload,
            "max_upload_mb": max_mb,
            "pool_max": pool_max,
            "idle_timeout": 0,
            "limits": {"memory_mb": 8 * max_mb + 2048, "cell_timeout": 300},
        }
        config_file.write_text(json.dumps(config))
        self.client = AgentClient(
            ServerInfo(f"http://127.0.0.1:{self.server.port}/", TOKEN), timeout=600
        )

    async def pool_ready(self) -> None:
        while (await self.server.call("GET", "health"))["pool"].get("ready", 0) < 1:
            await asyncio.sleep(0.1)

    async def first_output(self, prompt: str, **body: Any) -> tuple[float, float]:
        """Seconds from POST /sessions to its 201, and to the first cell output."""
        await self.pool_ready()
        started = time.perf_counter()
        info = await self.server.call("POST", "sessions", {"prompt": prompt, **body})
        created = time.perf_counter() - started
        url = self.client.api.replace("http", "ws", 1) + f"/sessions/{info['id']}/events"
        request = HTTPRequest(url, headers={"Authorization": f"token {TOKEN}"})
        ws = await websocket_connect(request)
        try:
            while True:
                message = await ws.read_message()
                if message is None:
                    raise RuntimeError("the event stream ended early")
                event = json.loads(message)
                if event["type"] in ("cell_output", "run_finished"):
                    output = time.perf_counter() - started
                    break
        finally:
            ws.close()
        await self.server.call("DELETE", f"sessions/{info['id']}")
        return created, output


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


async def first_cell(work: Path, model_url: str, repeat: int) -> list[tuple[str, ...]]:
    rows = []
    for label, preload in (("off", []), ("pandas + matplotlib", ["pandas", "matplotlib.pyplot"])):
        bench = Bench(work / f"preload-{len(preload)}", model_url, preload, 64)
        await bench.server.start()
        try:
            times = {k: [] for k in ("raw", "imports")}
            for _ in range(repeat):
                for kind in times:
                    times[kind].append((await bench.first_output(f"run {kind}"))[1])
        finally:
            bench.server.stop()
        raw, imports = (statistics.median(times[k]) for k in ("raw", "imports"))
        rows.append((label, ms(raw), ms(imports), ms(imports - raw)))
    return rows


async def uploads(
    work: Path, model_url: str, sizes: list[int], repeat: int
) -> list[tuple[str, ...]]:
    """Each phase of ``--with`` for a frame of each size, median of ``repeat`` runs. Every
    run starts with the pool refilled, so no kernel start (the refill after the previous
    session) runs alongside and is counted in."""
    import numpy as np
    import pandas as pd

    preload = ["numpy", "pandas", "matplotlib.pyplot"]  # the default where all are installed
    bench = Bench(work / "uploads", model_url, preload, max(sizes) * 2 + 16)
    await bench.server.start()
    rows = []
    try:
        for size in sizes:
            n = size * 1024 * 1024 // 32  # four 8-byte columns
            rng = np.random.default_rng(0)
            frame = pd.DataFrame(
                {
                    "when": pd.date_range("2020-01-01", periods=n, freq="s"),
                    "a": rng.normal(size=n),
                    "b": rng.integers(0, 1000, size=n),
                    "c": rng.random(size=n),
                }
            )
            runs = []
            for _ in range(repeat):
                await bench.pool_ready()
                t0 = time.perf_counter()
                payload = serialize("df", frame)
                t1 = time.perf_counter()
                sent = await bench.client.upload("df", payload.format, payload.data, payload.sha256)
                t2 = time.perf_counter()
                with_upload, _ = await bench.first_output("run idle", uploads=[sent["id"]])
                without, _ = await bench.first_output("run idle")
                load = max(with_upload - without, 0.0)
                runs.append((t1 - t0, t2 - t1, load, (t1 - t0) + (t2 - t1) + load))
                sent_as = f"{len(payload.data) / 1024 / 1024:,.1f} MB {payload.format}"
                del payload
            medians = [statistics.median(r[i] for r in runs) for i in range(4)]
            rows.append((f"{size} MB ({n:,} rows)", sent_as, *(ms(m) for m in medians)))
            del frame
    finally:
        bench.server.stop()
    return rows


async def bursts(work: Path, model_url: str, n: int) -> list[tuple[str, ...]]:
    """Two bursts of ``n`` session creates; p50 / p95 of POST /sessions to its 201."""
    bench = Bench(work / "bursts", model_url, [], 64, pool_max=n)
    await bench.server.start()
    rows = []
    try:
        for label in ("first burst (pool of 1)", "second burst (pool grown)"):

            async def create() -> tuple[float, str]:
                t0 = time.perf_counter()
                info = await bench.server.call("POST", "sessions", {"prompt": "run idle"})
                return time.perf_counter() - t0, info["id"]

            done = await asyncio.gather(*(create() for _ in range(n)))
            await asyncio.gather(
                *(bench.server.call("DELETE", f"sessions/{sid}") for _, sid in done)
            )
            times = [t for t, _ in done]
            rows.append((label, str(n), ms(statistics.median(times)), ms(pct(times, 0.95))))
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:  # let the pool grow before the second burst
                pool = (await bench.server.call("GET", "health"))["pool"]
                if pool.get("ready", 0) >= n:
                    break
                await asyncio.sleep(0.5)
    finally:
        bench.server.stop()
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--sizes", default="1,100,500", help="DataFrame sizes in MB")
    parser.add_argument("--burst", type=int, default=16, help="sessions per burst (0: none)")
    parser.add_argument("--only", choices=["first", "with", "burst"], help="one table only")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    with (
        tempfile.TemporaryDirectory(prefix="codeagent-bench-") as tmp,
        ScriptedModelServer(responder) as model,
    ):
        work = Path(tmp)
        only = args.only
        first = await first_cell(work, model.url, args.repeat) if only in (None, "first") else []
        sent = (
            await uploads(work, model.url, sizes, args.repeat)
            if sizes and only in (None, "with")
            else []
        )
        burst = (
            await bursts(work, model.url, args.burst)
            if args.burst and only in (None, "burst")
            else []
        )
    if first:
        print(f"first cell, POST /sessions to first output (median of {args.repeat})\n")
        header = ("preload", "`1+1`", "`import pandas, pyplot`", "imports cost")
        print(table(header, first))
    if sent:
        print(
            "\n--with a DataFrame: serialize (user kernel), upload, load (sandbox); "
            f"median of {args.repeat}\n"
        )
        header = ("DataFrame", "sent as", "serialize", "upload", "load", "total")
        print(table(header, sent))
    if burst:
        print("\nbursts of session creates, POST /sessions to 201 (pool_size=1)\n")
        print(table(("burst", "sessions", "p50", "p95"), burst))


if __name__ == "__main__":
    asyncio.run(main())
