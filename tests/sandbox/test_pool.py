"""The warm pool and many sandboxes at once."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import pytest

from codeagent_jupyter.errors import SandboxError
from codeagent_jupyter.sandbox import Sandbox, SandboxPool, cgroup

from .conftest import SMALL


async def test_four_sandboxes_execute_in_parallel(tmp_path: Path) -> None:
    boxes = [Sandbox(workdir=tmp_path, limits=SMALL) for _ in range(4)]
    try:
        await asyncio.gather(*(sb.start() for sb in boxes))
        code = "import time; t0 = time.time(); time.sleep(1.5); print({i}, t0, time.time())"
        results = await asyncio.gather(
            *(sb.execute(code.format(i=i)) for i, sb in enumerate(boxes))
        )
    finally:
        ids = [sb.kernel_id for sb in boxes]
        await asyncio.gather(*(sb.shutdown() for sb in boxes))
    printed = [r.text.split() for r in results]
    assert [p[0] for p in printed] == ["0", "1", "2", "3"]
    # In parallel, not one after another: every cell started before any other one ended.
    starts, ends = [float(p[1]) for p in printed], [float(p[2]) for p in printed]
    assert max(starts) < min(ends)
    assert not any(sb.is_alive() for sb in boxes)
    for kernel_id in ids:  # nothing left behind: sockets, connection files, cgroups
        assert not list(Path(tempfile.gettempdir()).glob(f"codeagent-sbx-*/kernel-{kernel_id}*"))
        assert not any(d.exists() for d in cgroup.group_dirs(kernel_id).values())


async def test_pool_hands_out_fresh_sandboxes_and_refills(tmp_path: Path) -> None:
    pool = SandboxPool(size=1, workdir=tmp_path, limits=SMALL)
    await pool.start()
    try:
        assert pool.status() == {
            "size": 1,
            "ready": 1,
            "starting": 0,
            "workdir": str(tmp_path.resolve()),
            "failures": 0,
            "last_error": None,
            "enforcement": pool.status()["enforcement"],
        }
        assert pool.status()["enforcement"]["env"] == "allow-list"
        start = time.monotonic()
        first = await pool.acquire()
        assert time.monotonic() - start < 0.1  # it was already started
        assert pool.status()["starting"] == 1  # refilling in the background
        r = await first.execute("leak = 'from first'\nimport os; os.getcwd()")
        assert r.text == repr(str(tmp_path.resolve()))
        await first.shutdown()
        second = await pool.acquire()  # waits for the refill
        try:
            assert second is not first
            assert (await second.execute("leak")).status == "error"  # never reused dirty
        finally:
            await second.shutdown()
        other = tmp_path / "notebooks"
        other.mkdir()
        third = await pool.acquire(workdir=other)
        try:
            r = await third.run_command("pwd && touch made-here")
            assert r.text == str(other.resolve()) and (other / "made-here").exists()
        finally:
            await third.shutdown()
    finally:
        await pool.shutdown()
    assert pool.status()["ready"] == 0
    with pytest.raises(SandboxError, match="shut down"):
        await pool.acquire()


async def test_pool_reports_start_failures(tmp_path: Path) -> None:
    pool = SandboxPool(size=1, workdir=tmp_path, limits=SMALL, kernel_name="no-such-kernel")
    await pool.start()
    try:
        assert pool.status()["failures"] == 1
        assert "no-such-kernel" in pool.status()["last_error"]
        with pytest.raises(SandboxError, match="could not start a sandbox"):
            await pool.acquire()
    finally:
        await pool.shutdown()
