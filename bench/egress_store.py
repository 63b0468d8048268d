"""What keeping fetched bodies costs, and what a replay from them costs, same run.

One broker in this process relays GETs from an HTTP server in a process of its own (on
127.0.0.2, opened by the test policy): without a content store (the baseline), with one
(each body streamed to a file and renamed to its SHA-256), and a replaying broker that
answers the same requests from that store (each body hashed again before it is sent, no
network). 100 small GETs (60 bytes) and 20 1 MiB GETs each, timed one by one by a raw
client on the broker's unix socket, the first two brokers taking turns; the ratios are
against the baseline of the same run.

Run: ``python bench/egress_store.py [--small 100] [--big 20] [--rounds 5]``. Prints a
Markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _table import pct, table  # noqa: E402
from egress import origin  # noqa: E402

from codeagent_jupyter.egress import EgressPolicy  # noqa: E402
from codeagent_jupyter.egress.bodies import BodyStore  # noqa: E402
from codeagent_jupyter.egress.broker import Broker  # noqa: E402
from codeagent_jupyter.egress.replay import Recording  # noqa: E402


async def timed(path: Path, url: str, times: int) -> list[float]:
    """Seconds per GET of ``url`` through the broker at ``path``, each its own connection."""
    took = []
    host = url.split("/")[2]
    for _ in range(times):
        start = time.perf_counter()
        reader, writer = await asyncio.open_unix_connection(str(path))
        writer.write(f"GET {url} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        await writer.drain()
        answer = await reader.read()
        writer.close()
        took.append(time.perf_counter() - start)
        if not answer.startswith(b"HTTP/1.") or b" 200 " not in answer.split(b"\r\n")[0]:
            raise SystemExit(f"not a 200: {answer[:200]!r}")
    return took


async def run(policy: EgressPolicy, folder: Path, urls: dict[str, str], args: Any) -> dict:
    """The three brokers timed in turns (``--rounds`` of them), so that a machine busy
    with something else slows each of them alike."""
    store = BodyStore(folder / "fetched")
    records: list[dict[str, Any]] = []
    plain = Broker(policy, folder / "a.sock", records.append)
    keeping = Broker(policy, folder / "b.sock", records.append, bodies=store)
    labels = ("no store (baseline)", "content store", "replay from the store")
    results: dict[str, dict[str, list[float]]] = {x: {"small": [], "big": []} for x in labels}
    for broker in (plain, keeping):
        await broker.start()
    try:
        for _ in range(args.rounds):
            for label, broker in zip(labels, (plain, keeping), strict=False):
                for kind, url in urls.items():
                    results[label][kind] += await timed(broker.path, url, n(kind, args))
    finally:
        for broker in (plain, keeping):
            await broker.close()
    stored = [r for r in records if r.get("stored")]
    replaying = Broker(policy, folder / "r.sock", replay=Recording(stored, store))
    await replaying.start()
    try:
        for _ in range(args.rounds):
            for kind, url in urls.items():
                results[labels[2]][kind] += await timed(replaying.path, url, n(kind, args))
    finally:
        await replaying.close()
    return results


def n(kind: str, args: Any) -> int:
    """Requests of ``kind`` per round."""
    return max(1, (args.small if kind == "small" else args.big) // args.rounds)


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        www = Path(tmp) / "www"
        www.mkdir()
        (www / "small.txt").write_text("x" * 60)
        (www / "big.bin").write_bytes(b"y" * (1 << 20))
        with origin(www) as port:
            policy = EgressPolicy.from_dict(
                {
                    "allow": ["data.test"],
                    "ports": [port],
                    "allow_ranges": ["127.0.0.2/32"],
                    "hosts": {"data.test": "127.0.0.2"},
                    "rate_per_minute": 100_000,
                    "max_session_mb": 100_000,
                }
            )
            base = f"http://data.test:{port}"
            urls = {"small": f"{base}/small.txt", "big": f"{base}/big.bin"}
            results = await run(policy, Path(tmp), urls, args)
    baseline = results["no store (baseline)"]
    rows = []
    for label, timings in results.items():
        for kind, name in (
            ("small", f"{args.small} small GETs"),
            ("big", f"1 MiB GET x{args.big}"),
        ):
            p50 = statistics.median(timings[kind])
            rows.append(
                (
                    label,
                    name,
                    f"{p50 * 1000:.2f}",
                    f"{pct(timings[kind], 0.95) * 1000:.2f}",
                    f"{(p50 - statistics.median(baseline[kind])) * 1000:+.2f}",
                    f"{statistics.median(baseline[kind]) / p50 * 100:.0f} %",
                )
            )
    print(table(["broker", "requests", "ms (p50)", "p95", "added ms", "vs baseline"], rows))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=100, help="small GETs timed")
    parser.add_argument("--big", type=int, default=20, help="1 MiB GETs timed")
    parser.add_argument("--rounds", type=int, default=5, help="turns the brokers take")
    asyncio.run(main(parser.parse_args()))
