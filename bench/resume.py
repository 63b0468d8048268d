"""Benchmark: resume time against re-run cells, and the cost of workspace snapshots.

    python bench/resume.py [--cells 5,20,50] [--small-files 1000] [--big-mb 100]
    python bench/resume.py --cells ""      # the snapshot and change-set tables only

Resume: a session of N light cells is recorded the way the CLI records one (``build_agent``
with recorded model turns, the notebook recorder signing each save, and the snapshot sink, a
real sandbox), then resumed the way ``codeagent resume`` does: read the notebook once, check
its signature, ``plan`` from that text, then ``rebuild`` (restore the snapshot, re-run the
cells, restore again) in a second, already started sandbox. The table shows the resume time, the
cells' own run time, and the difference: what resuming costs beyond the cells (target: at most
2 s for 20 cells). Sandbox start is reported apart; a pool hides it on the server.

Snapshots: a workspace of ``--small-files`` small files and one ``--big-mb`` file, captured
first, then again unchanged (target: an unchanged 100 MB file costs at most 50 ms), then with
one small file changed; once with the default large-file threshold (the big file referenced)
and once with the big file copied.

Change sets: the same kind of workspace, and the change set of a session over it computed
from the snapshots that exist (``record.changes.session_changes``, as ``codeagent diff``,
the REST route and the notebook's last cell compute it), also with its JSON as the route
sends it (thumbnails included): a session that created every file, one that edited ten
small files and rewrote the big one, one that changed nothing (target: at most 100 ms).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._table import table
from codeagent_jupyter.config import AgentConfig
from codeagent_jupyter.core.assembly import build_agent
from codeagent_jupyter.models.replay import ReplayModel
from codeagent_jupyter.record.changes import session_changes
from codeagent_jupyter.record.notary import Notary
from codeagent_jupyter.record.reader import parse_session
from codeagent_jupyter.record.recorder import NotebookRecorder
from codeagent_jupyter.record.restore import rebuild
from codeagent_jupyter.record.resume import plan
from codeagent_jupyter.record.snapshot_sink import SnapshotRecorder
from codeagent_jupyter.record.snapshots import SnapshotSettings, SnapshotStore
from codeagent_jupyter.sandbox import Sandbox
from codeagent_jupyter.tools import ToolBox


def _turns(cells: int) -> list[dict]:
    turns = []
    for i in range(cells):
        code = f"v{i} = sum(range({1000 + i}))\nopen('out{i % 5}.txt', 'w').write(str(v{i}))"
        call = {"id": f"c{i}", "type": "function", "function": {"name": "run_cell"}}
        call["function"]["arguments"] = json.dumps({"code": code})
        turns.append({"role": "assistant", "content": None, "tool_calls": [call]})
    turns.append({"role": "assistant", "content": "done"})
    return turns


async def _resume_row(cells: int, base: Path, unconfined: bool) -> tuple:
    ws = base / f"ws{cells}"
    ws.mkdir()
    out = base / f"s{cells}.ipynb"
    notary = Notary(base / "notary", durable=False)  # as the CLI keeps its own
    async with Sandbox(workdir=ws, allow_unconfined=unconfined) as sandbox:
        recorder = NotebookRecorder(out, on_saved=notary.saved)
        sink = SnapshotRecorder(
            SnapshotStore.for_workspace(ws), ws, recorder.notebook.metadata["codeagent"]
        )
        config = AgentConfig(max_steps=cells + 1)
        tools = ToolBox(sandbox, sandbox.workdir)
        model = ReplayModel(_turns(cells))
        loop = build_agent(model, sandbox, [sink, recorder], config, tools=tools)
        finished = await loop.run("light work")
        assert finished.status == "answered", finished.reason
    fresh = base / f"fresh{cells}"
    fresh.mkdir()
    started = time.perf_counter()
    sandbox = Sandbox(workdir=fresh, allow_unconfined=unconfined)
    await sandbox.start()
    start_s = time.perf_counter() - started
    try:
        began = time.perf_counter()
        text = out.read_text(encoding="utf-8")
        assert notary.verify(out, text) is None, "the recording is not signed"
        todo = plan(out, notebook=parse_session(text, out))
        done = await rebuild(todo, sandbox, SnapshotStore.for_workspace(ws))
        total = time.perf_counter() - began
        check = await sandbox.execute(f"print(v{cells - 1})")
    finally:
        await sandbox.shutdown()
    own = sum(c.metadata["codeagent"].get("duration_s", 0.0) for _, c in todo.cells)
    assert not done.problems, done.problems
    assert str(sum(range(1000 + cells - 1))) in check.text
    return cells, done.cells, start_s, total, own, total - own


def _snapshot_rows(base: Path, small: int, big_mb: int) -> list[tuple]:
    ws = base / "snapws"
    ws.mkdir()
    for i in range(small):
        sub = ws / f"d{i % 20}"
        sub.mkdir(exist_ok=True)
        (sub / f"f{i}.txt").write_text(f"file {i}\n" * 10)
    with open(ws / "big.bin", "wb") as f:
        for _ in range(big_mb):
            f.write(os.urandom(1 << 20))
    rows = []
    for label, settings in (
        ("big file referenced", SnapshotSettings()),
        ("big file copied", SnapshotSettings(large_file_bytes=(big_mb + 1) << 20)),
    ):
        store = SnapshotStore(base / f"store-{len(rows)}", settings)
        t0 = time.perf_counter()
        first = store.capture(ws)
        t1 = time.perf_counter()
        same = store.capture(ws, first.id)
        t2 = time.perf_counter()
        (ws / "d0" / "f0.txt").write_text("changed\n")
        one = store.capture(ws, same.id)
        t3 = time.perf_counter()
        mib = store.stored_bytes() / (1 << 20)
        rows.append((label, first.files, t1 - t0, t2 - t1, t3 - t2, mib, one.stored_bytes))
        (ws / "d0" / "f0.txt").write_text("file 0\n" * 10)
    big_only = SnapshotStore(base / "store-big")
    big_ws = base / "bigonly"
    big_ws.mkdir()
    shutil.copyfile(ws / "big.bin", big_ws / "big.bin")
    first = big_only.capture(big_ws)
    t0 = time.perf_counter()
    big_only.capture(big_ws, first.id)
    rows.append(
        (f"only the {big_mb} MB file, unchanged", 1, 0.0, time.perf_counter() - t0, 0, 0, 0)
    )
    return rows


def _fill(ws: Path, small: int, big_mb: int, text: str = "file") -> None:
    for i in range(small):
        sub = ws / f"d{i % 20}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{i}.py").write_text(
            f"# {text} {i}\n" + "".join(f"x{j} = {j}\n" for j in range(20))
        )
    with open(ws / "big.bin", "wb") as f:
        for _ in range(big_mb):
            f.write(os.urandom(1 << 20))


def _changes_rows(base: Path, small: int, big_mb: int) -> list[tuple]:
    """(session, store, files listed, change set ms, its CPU ms, with JSON ms): best of
    five (the CPU time says what the work costs on a machine busy with other work)."""
    rows = []
    for label, settings in (
        ("big file referenced", SnapshotSettings()),
        ("big file copied", SnapshotSettings(large_file_bytes=(big_mb + 1) << 20)),
    ):
        ws = base / f"changes-{len(rows)}"
        ws.mkdir()
        store = SnapshotStore(base / f"changes-store-{len(rows)}", settings)
        start = store.capture(ws)  # the session found an empty folder ...
        _fill(ws, small, big_mb)
        made = store.capture(ws, start.id)  # ... and made every file
        for i in range(0, small, max(small // 10, 1)):  # then edited ten and the big one
            (ws / f"d{i % 20}" / f"f{i}.py").write_text(f"# edited {i}\nx = {i}\n")
        with open(ws / "big.bin", "r+b") as f:
            f.write(os.urandom(1 << 20))
        edited = store.capture(ws, made.id)
        same = store.capture(ws, edited.id)
        sessions = (
            ("created every file", [start.id, made.id]),
            ("edited 10 + the big one", [made.id, edited.id]),
            ("changed nothing", [edited.id, same.id]),
        )
        for name, ids in sessions:
            meta = {"snapshots": [{"run": 0, "step": n, "snapshot": i} for n, i in enumerate(ids)]}
            wall, cpu, with_json, listed = [], [], [], 0
            for _ in range(5):
                t0, c0 = time.perf_counter(), time.process_time()
                changes = session_changes(meta, store)
                t1, c1 = time.perf_counter(), time.process_time()
                json.dumps(session_changes(meta, store, thumbnails=True).to_dict())
                t2 = time.perf_counter()
                wall.append(t1 - t0)
                cpu.append(c1 - c0)
                with_json.append(t2 - t1)
                listed = len(changes.files)
            best = (min(wall) * 1000, min(cpu) * 1000, min(with_json) * 1000)
            rows.append((name, label, listed, *best))
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", default="5,20,50")
    parser.add_argument("--small-files", type=int, default=1000)
    parser.add_argument("--big-mb", type=int, default=100)
    parser.add_argument("--isolation", choices=("auto", "none"), default="auto")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-resume-") as tmp:
        base = Path(tmp)
        rows = []
        for n in (int(x) for x in args.cells.split(",") if x):  # --cells "": none
            cells, rerun, *seconds = await _resume_row(n, base, args.isolation == "none")
            rows.append((cells, rerun, *(f"{x:.2f}" for x in seconds)))
        header = ("cells", "re-run", "sandbox start s", "resume s", "cells' own s", "overhead s")
        print(table(header, rows, "rrrrrr"))
        print()
        rows = []
        for name, files, *seconds, mib, new_bytes in _snapshot_rows(
            base, args.small_files, args.big_mb
        ):
            rows.append((name, files, *(f"{x:.3f}" for x in seconds), f"{mib:.1f}", new_bytes))
        header = (
            "workspace",
            "files",
            "first s",
            "unchanged s",
            "one changed s",
            "store MiB",
            "new bytes",
        )
        print(table(header, rows))
        print()
        rows = []
        for name, store, files, *ms in _changes_rows(base, args.small_files, args.big_mb):
            rows.append((name, store, files, *(f"{x:.1f}" for x in ms)))
        header = (
            "change set of a session that",
            "store",
            "files listed",
            "ms",
            "CPU ms",
            "with JSON ms",
        )
        print(table(header, rows, "llrrrr"))


if __name__ == "__main__":
    asyncio.run(main())
