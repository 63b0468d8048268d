"""``edit_file`` on a 1 MB file: how long one exact replacement takes (target: <= 20 ms).

Times the whole tool call through ``ToolBox`` (argument check, the confined read, the
search, the atomic write, the diff) on a 1 MB text file in a temporary workspace, edited
at its middle and at its end, and with ``replace_all`` on every line.

    python bench/edit_file.py [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codeagent_jupyter.tools import ToolBox

LINE = "row {i:06d}, 2026-01-01, some text that fills the line to about fifty\n"


async def measure(root: Path, repeat: int) -> list[tuple[str, float, float]]:
    lines = 1_000_000 // len(LINE.format(i=0))
    (root / "big.txt").write_text("".join(LINE.format(i=i) for i in range(lines)))
    size = (root / "big.txt").stat().st_size
    box = ToolBox(None, root)
    cases = {
        f"one replacement at the middle ({size / 1e6:.1f} MB)": (f"row {lines // 2:06d},", False),
        "one replacement at the end": (f"row {lines - 1:06d},", False),
        f"replace_all, every line ({lines:,} places)": ("2026-01-01", True),
    }
    rows = []
    for label, (needle, every) in cases.items():
        times = []
        for n in range(repeat):
            # Toggle between two spellings so every call really changes the file.
            old, new = (needle, needle.upper()) if n % 2 == 0 else (needle.upper(), needle)
            if every:
                old, new = (needle, "2026-01-02") if n % 2 == 0 else ("2026-01-02", needle)
            args = {"path": "big.txt", "old_string": old, "new_string": new}
            if every:
                args["replace_all"] = True
            start = time.perf_counter()
            await box.call("edit_file", args)
            times.append((time.perf_counter() - start) * 1000)
        ordered = sorted(times)
        rows.append((label, statistics.median(times), ordered[int(0.95 * (len(ordered) - 1))]))
    return rows


def main() -> None:
    cli = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cli.add_argument("--repeat", type=int, default=40)
    args = cli.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = asyncio.run(measure(Path(tmp), args.repeat))
    print("| edit_file call | p50 ms | p95 ms | target |")
    print("|---|---:|---:|---:|")
    for label, p50, p95 in rows:
        print(f"| {label} | {p50:.1f} | {p95:.1f} | <= 20 ms |")


if __name__ == "__main__":
    main()
