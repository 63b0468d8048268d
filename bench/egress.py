"""What ``--network policy`` costs: the egress broker against the host's network, same run.

Two real sandboxes on this machine, one with ``--network host`` (direct) and one with
``--network policy`` (through the forwarder on its loopback and the broker outside), fetch
from the same HTTP server on loopback: 100 small GETs (about 60 bytes each, timed one by
one) and a 1 MiB GET (repeated ``--big`` times), timed inside the sandbox with the same
urllib code; the server runs in a process of its own. Then the broker alone: a client
process on the host times the same GETs straight to the origin, on the broker's unix socket,
and on the unix sockets of two bare relays (each a process of its own, a thread a connection
copying the response back with ``recv``/``sendall``, no policy; one also takes a sha256 of
each chunk, as the broker's records need), in turn for each request. The bare relays are the
ceiling for any relay one process hop away on this machine. Then the broker's memory:
``--brokers`` brokers (16 by default) started in this process as 16 sandboxes would attach
them, each with a client that has made requests
and holds a connection open; the growth of this process's RSS is what they cost. The
forwarder's RSS inside the policy sandbox is shown too (a fork of the launcher: most of its
pages are shared with the kernel until written).

Run: ``python bench/egress.py [--small 100] [--big 20] [--brokers 16]``. Prints Markdown
tables; the test policy maps the server's name to 127.0.0.2, which only it opens.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from _table import pct, table  # noqa: E402

from codeagent_jupyter.egress import EgressPolicy  # noqa: E402
from codeagent_jupyter.egress.relay import CHUNK  # noqa: E402
from codeagent_jupyter.sandbox import Sandbox, SandboxLimits  # noqa: E402
from codeagent_jupyter.sandbox.egress_link import EgressLink  # noqa: E402

CELL = """
import json, time, urllib.request
opener = urllib.request.build_opener({handler})
def get(url):
    t = time.perf_counter()
    with opener.open(url) as r:
        body = r.read()
    return time.perf_counter() - t, len(body)
small = [get({small!r}) for _ in range({n_small})]
big = [get({big!r}) for _ in range({n_big})]
print(json.dumps({{"small": [s for s, _ in small], "big": [s for s, _ in big],
                  "big_bytes": big[0][1]}}))
"""
FORWARDER_RSS = """
import os
mine = os.getpid()
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != mine:
        try:
            status = open(f"/proc/{pid}/status").read()
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        program = os.path.basename(cmd.split(b"\\0")[0])
        if program.startswith(b"python") and b"codeagent_jupyter.sandbox.launcher" in cmd:
            rss = [l for l in status.splitlines() if l.startswith("VmRSS")]
            print(rss[0].split()[1] if rss else "?")
"""


ALONE = r"""
import json, socket, sys, time
port, paths, counts = int(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
def get(connect, request):
    t = time.perf_counter()
    with connect() as s:
        s.sendall(request)
        while s.recv(1 << 20):
            pass
    return time.perf_counter() - t
def unix(path):
    def connect():
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        return s
    return connect
def direct():
    return socket.create_connection(("127.0.0.2", port))
out = {}
for name, n in counts.items():
    out[name] = {"direct": []} | {way: [] for way in paths}
    for _ in range(n):  # in turn: a busy moment slows them all
        out[name]["direct"].append(get(direct, f"GET /{name} HTTP/1.0\r\n\r\n".encode()))
        line = f"GET http://data.test:{port}/{name} HTTP/1.0\r\n\r\n".encode()
        for way, path in paths.items():
            out[name][way].append(get(unix(path), line))
print(json.dumps(out))
"""
BARE = r"""
import hashlib, socket, sys, threading
path, port, digest, size = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "sha256", sys.argv[4]
def serve(conn):
    with conn:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(65536)
            if not chunk:
                return
            head += chunk
        target = head.split(b" ", 2)[1]  # http://data.test:PORT/NAME
        name = target.split(b"/", 3)[3] if target.startswith(b"http://") else target[1:]
        body = hashlib.sha256()
        with socket.create_connection(("127.0.0.2", port)) as up:
            up.sendall(b"GET /" + name + b" HTTP/1.0\r\n\r\n")
            while chunk := up.recv(int(size)):
                conn.sendall(chunk)
                if digest:
                    body.update(chunk)
server = socket.socket(socket.AF_UNIX)
server.bind(path)
server.listen(64)
print("ready", flush=True)
while True:
    conn, _ = server.accept()
    threading.Thread(target=serve, args=(conn,), daemon=True).start()
"""


@contextlib.contextmanager
def origin(folder: Path, host: str = "127.0.0.2") -> Iterator[int]:
    """``python -m http.server`` on ``host`` in a process of its own (so it never shares
    a GIL with the broker, which runs in this one); yields its port."""
    with socket.socket() as probe:
        probe.bind((host, 0))
        port = probe.getsockname()[1]
    argv = [sys.executable, "-m", "http.server", "--bind", host, str(port)]
    server = subprocess.Popen(
        [*argv, "--directory", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        for _ in range(100):
            with contextlib.suppress(OSError), socket.create_connection((host, port), 1):
                break
            time.sleep(0.1)
        yield port
    finally:
        server.terminate()
        server.wait(10)


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def fetch(
    limits: SandboxLimits, policy: EgressPolicy | None, urls: tuple[str, str], args: Any
) -> tuple[dict[str, Any], str]:
    """Time the GETs in a fresh sandbox under ``limits``; the forwarder's RSS if any."""
    handler = "" if policy is not None else "urllib.request.ProxyHandler({})"
    code = CELL.format(
        handler=handler, small=urls[0], big=urls[1], n_small=args.small, n_big=args.big
    )
    with tempfile.TemporaryDirectory() as ws:
        async with Sandbox(ws, limits, egress=policy, on_egress=lambda r: None) as sb:
            result = await sb.execute(code)
            if result.status != "ok":
                raise SystemExit(f"the timing cell failed: {result.text}")
            forwarder = ""
            if policy is not None:
                forwarder = (await sb.execute(FORWARDER_RSS)).text.strip()
    return json.loads(result.text.strip().splitlines()[-1]), forwarder


@contextlib.contextmanager
def bare_relay(folder: Path, port: int, digest: bool) -> Iterator[Path]:
    """The ceiling for any relay in a process of its own: ``BARE`` on a unix socket in
    ``folder``, a thread per connection that sends the origin the request's path and copies
    the response back (``CHUNK`` bytes a read, as the broker reads), with ``digest`` a sha256 of
    each chunk after it is sent (as the broker's records need); no policy, no parsing of the
    response. A process of its own, not a thread of this one: here it would share a GIL
    with the broker's event loop and this process's other threads, and be slowed by what it
    should be measured against; as a process it is one more hop, as the broker is to the
    client. Yields the socket's path."""
    path = folder / ("bare-sha256.sock" if digest else "bare.sock")
    argv = [sys.executable, "-c", BARE, str(path), str(port), "sha256" if digest else "-"]
    relay = subprocess.Popen([*argv, str(CHUNK)], stdout=subprocess.PIPE, text=True)
    try:
        if relay.stdout is None or relay.stdout.readline().strip() != "ready":
            raise SystemExit("the bare relay did not start")
        yield path
    finally:
        relay.terminate()
        relay.wait(10)


async def broker_alone(port: int, policy: EgressPolicy, args: Any) -> dict[str, Any]:
    """The broker's own share: a client on the host (a process of its own) times the same
    GETs straight to the origin, on the broker's unix socket, and on two bare relays' sockets
    (``bare_relay``, without and with the sha256), in turn for each request; no sandbox, no
    forwarder."""
    link = EgressLink(policy, lambda r: None)
    path = await link.start()
    counts = json.dumps({"small.txt": args.small, "big.bin": args.big})
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as relays:
        bare = relays.enter_context(bare_relay(Path(tmp), port, digest=False))
        hashed = relays.enter_context(bare_relay(Path(tmp), port, digest=True))
        paths = json.dumps({"broker": str(path), "bare": str(bare), "bare+sha256": str(hashed)})
        client = await asyncio.create_subprocess_exec(
            sys.executable, "-c", ALONE, str(port), paths, counts, stdout=subprocess.PIPE
        )
        out, _ = await client.communicate()
    await link.close()
    return dict(json.loads(out))


async def broker_memory(port: int, count: int) -> tuple[int, int, int]:
    """RSS growth of this process with ``count`` brokers, each used and holding a client."""
    policy = EgressPolicy.from_dict(
        {
            "allow": ["data.test"],
            "ports": [port],
            "allow_ranges": ["127.0.0.2/32"],
            "hosts": {"data.test": "127.0.0.2"},
        }
    )
    gc.collect()
    before = rss_kib()
    tracemalloc.start()
    links = [EgressLink(policy, lambda r: None) for _ in range(count)]
    held = []
    for link in links:
        path = await link.start()
        for _ in range(3):
            reader, writer = await asyncio.open_unix_connection(str(path))
            writer.write(f"GET http://data.test:{port}/small.txt HTTP/1.1\r\n\r\n".encode())
            await reader.read()
            writer.close()
        held.append(await asyncio.open_unix_connection(str(path)))
    gc.collect()
    after = rss_kib()
    traced, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    for _, writer in held:
        writer.close()
    for link in links:
        await link.close()
    return before, after, traced


def _row(label: str, direct: list[float], broker: list[float]) -> tuple[str, ...]:
    """Direct and broker (or relay) p50, its p95, what it adds, and direct / it."""
    d, b = statistics.median(direct), statistics.median(broker)
    p95 = pct(broker, 0.95)
    added, speed = f"{(b - d) * 1000:+.2f}", f"{d / b * 100:.0f} %"
    return (label, f"{d * 1000:.2f}", f"{b * 1000:.2f}", f"{p95 * 1000:.2f}", added, speed)


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        www = Path(tmp)
        (www / "small.txt").write_text("x" * 60)
        (www / "big.bin").write_bytes(b"y" * (1 << 20))
        with origin(www, host="127.0.0.1") as direct_port, origin(www) as port:
            direct = (
                f"http://127.0.0.1:{direct_port}/small.txt",
                f"http://127.0.0.1:{direct_port}/big.bin",
            )
            brokered = (f"http://data.test:{port}/small.txt", f"http://data.test:{port}/big.bin")
            policy = EgressPolicy.from_dict(
                {
                    "allow": ["data.test"],
                    "ports": [port],
                    "allow_ranges": ["127.0.0.2/32"],
                    "hosts": {"data.test": "127.0.0.2"},
                    "rate_per_minute": 100_000,
                }
            )
            base = dict(memory_mb=1024, cell_timeout=600)
            host, _ = await fetch(SandboxLimits(network=True, **base), None, direct, args)
            cpu = time.process_time()
            ours, forwarder = await fetch(
                SandboxLimits(egress_broker=True, **base), policy, brokered, args
            )
            cpu = time.process_time() - cpu  # the broker's share, and the sandbox's start
            alone = await broker_alone(port, policy, args)
            before, after, traced = await broker_memory(port, args.brokers)
    labels = (
        (f"{args.small} small GETs", "small", "small.txt"),
        (f"1 MiB GET x{args.big}", "big", "big.bin"),
    )
    header = ["requests", "direct ms (p50)", "broker ms (p50)", "broker p95", "added ms", "speed"]
    print(table(header, [_row(label, host[key], ours[key]) for label, key, _ in labels]))
    mib = ours["big_bytes"] / (1 << 20)
    print()
    print(
        "The broker alone (a client on the host, on its unix socket; no sandbox, no "
        "forwarder), and two bare relays in processes of their own, one thread a connection, "
        "no policy: the ceiling for any relay one process hop away:"
    )
    print()
    ways = (
        ("broker", "broker"),
        ("bare", "bare relay (no policy, no hash)"),
        ("bare+sha256", "bare relay with sha256"),
    )
    rows = [
        _row(f"{label}, {what}", alone[name]["direct"], alone[name][way])
        for label, _, name in labels
        for way, what in ways
    ]
    print(table(["requests, through", "direct ms (p50)", "ms (p50)", "p95", *header[4:]], rows))
    print()
    print(
        f"CPU of this process (the broker, plus starting the sandbox) during the policy run: "
        f"{cpu:.2f} s for {args.small + args.big} requests; the machine's load average "
        f"{Path('/proc/loadavg').read_text().split()[0]} (each request crosses three processes "
        "more than a direct one: forwarder, broker, and back)"
    )
    print()
    print(
        f"1 MiB GET throughput: direct {mib / statistics.median(host['big']):.0f} MiB/s, "
        f"through the broker {mib / statistics.median(ours['big']):.0f} MiB/s"
    )
    print()
    print(
        table(
            [
                "brokers",
                "RSS growth KiB",
                "Python heap KiB (tracemalloc)",
                "per broker KiB",
                "forwarder RSS KiB",
            ],
            [
                (
                    args.brokers,
                    after - before,
                    f"{traced / 1024:.0f}",
                    f"{traced / 1024 / args.brokers:.0f}",
                    forwarder or "?",
                )
            ],
        )
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=100, help="small GETs timed")
    parser.add_argument("--big", type=int, default=20, help="1 MiB GETs timed")
    parser.add_argument("--brokers", type=int, default=16, help="brokers for the memory row")
    asyncio.run(main(parser.parse_args()))
