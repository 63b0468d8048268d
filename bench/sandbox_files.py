"""The file tools' round trip: 1 KB and 1 MB read and written through ``confined.Workspace``
(both resolutions: openat2 and per component) and through plain ``open``.

Part of ``bench/sandbox.py`` (``--only files``); kept apart because it starts no kernel.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from _table import pct, table

from codeagent_jupyter.util.confined import Workspace


def timed(fn: Any, n: int) -> list[float]:
    for _ in range(min(20, n)):
        fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return times


def file_round_trips(n: int) -> None:
    """Read and write 1 KB and 1 MB: confined (both resolutions) against plain ``open``."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "sub" / "dir").mkdir(parents=True)
        spaces = [Workspace(root, openat2=False)]
        if Workspace(root).resolution == "openat2":
            spaces.insert(0, Workspace(root))
        for size, label in ((1024, "1 KB"), (1 << 20, "1 MB")):
            data = os.urandom(size)
            rel = f"sub/dir/f{size}.bin"
            path = root / rel
            path.write_bytes(data)

            def plain_read(path: Path = path) -> bytes:
                with open(path, "rb") as f:
                    return f.read()

            def plain_write(path: Path = path, data: bytes = data) -> None:
                with open(path, "wb") as f:
                    f.write(data)

            for op, plain in (("read", plain_read), ("write", plain_write)):
                base = timed(plain, n)
                rows.append((f"{op} {label}: plain open()", base, ""))
                for ws in spaces:
                    if op == "read":
                        ours = timed(lambda ws=ws, rel=rel: ws.read_bytes(rel, 2 << 20), n)
                    else:
                        ours = timed(lambda ws=ws, rel=rel, d=data: ws.write_bytes(rel, d), n)
                    ratio = statistics.median(ours) / statistics.median(base)
                    name = f"{op} {label}: confined ({ws.resolution})"
                    rows.append((name, ours, f"x{ratio:.2f}"))
    header = ("file tool round trip", "p50 (ms)", "p95 (ms)", "vs plain open() p50")
    cells = [(n, f"{pct(t, 0.5) * 1000:.3f}", f"{pct(t, 0.95) * 1000:.3f}", o) for n, t, o in rows]
    print(table(header, cells, "lrrl"))
    print()
    print(f"runs: files={n} (confined writes are temp file + rename, plain writes are in place)")
