"""Real attacks from inside a real sandbox kernel on the file tools that run in the server.

The sandbox (bubblewrap) sees the workspace at the same path as the server, and a symlink's
target is resolved by whoever follows it, in that process's view: a link the sandbox plants
to a server-side directory (here the test's ``outside``, which the sandbox itself cannot
even see) leads the server out of the workspace if it ever follows it.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import pytest_asyncio

from codeagent_jupyter.errors import ToolError
from codeagent_jupyter.sandbox import Sandbox, SandboxLimits
from codeagent_jupyter.tools import ToolBox
from codeagent_jupyter.util.confined import ConfinementError, Workspace
from tests.zygotes import lane_start

pytestmark = pytest.mark.asyncio(loop_scope="module")

LIMITS = SandboxLimits(memory_mb=512, cell_timeout=10, max_processes=64, network=False)
SECRET = "OUTSIDE SECRET 7f3a\n"
RACE_S = 4.5
PROMPT = 10.0  # generous bound for "answers at all"; a blocked call would never answer

SWAP = """
import ctypes, os, threading, time
_libc = ctypes.CDLL(None, use_errno=True)
os.makedirs("d", exist_ok=True)
with open("d/secret.txt", "w") as f:
    f.write("inside\\n")
os.symlink({outside!r}, "d2")
_swaps = [0]
def _swap(until=time.monotonic() + {seconds}):
    while time.monotonic() < until:
        if _libc.renameat2(-100, b"d", -100, b"d2", 2) == 0:  # RENAME_EXCHANGE
            _swaps[0] += 1
    if os.path.islink("d"):  # end with d as the real directory
        _libc.renameat2(-100, b"d", -100, b"d2", 2)
_swapper = threading.Thread(target=_swap, daemon=True)
_swapper.start()
"""


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    ws = tmp_path_factory.mktemp("workspace").resolve()
    ws.chmod(0o777)  # writable for the sandbox whatever uid it runs as
    outside = tmp_path_factory.mktemp("outside").resolve()
    (outside / "secret.txt").write_text(SECRET)
    return ws, outside


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sandbox(dirs: tuple[Path, Path]) -> AsyncIterator[Sandbox]:
    # allow_unconfined: where bubblewrap is missing (a CI lane) the server-side file tools
    # are tested all the same; bubblewrap is still used wherever it works.
    async with Sandbox(
        workdir=dirs[0], limits=LIMITS, allow_unconfined=True, **lane_start(dirs[0])
    ) as sb:
        yield sb


async def in_sandbox(sb: Sandbox, code: str) -> str:
    res = await sb.execute(code)
    assert res.status == "ok", res.text
    return res.text


def outside_state(outside: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in outside.iterdir()}


async def test_swap_race_never_reads_or_writes_outside(sandbox: Sandbox, dirs):
    ws, outside = dirs
    before = outside_state(outside)
    tb = ToolBox(sandbox, ws)
    fallback = Workspace(ws, openat2=False)
    await in_sandbox(sandbox, SWAP.format(outside=str(outside), seconds=RACE_S))
    naive_hits = ok_reads = refused = 0
    leaked: list[str] = []
    end = time.monotonic() + RACE_S - 0.3
    i = 0
    while time.monotonic() < end:
        i += 1
        try:  # what unconfined code does: open by path, following links
            with open(ws / "d" / "secret.txt") as f:
                naive_hits += f.read() == SECRET
        except OSError:
            pass
        for call in (
            tb.call("read_file", {"path": "d/secret.txt"}),
            tb.call("write_file", {"path": "d/x.txt", "content": f"tool {i}\n"}),
        ):
            try:
                text = (await call).text
                ok_reads += "inside" in text
                leaked += [text] if "OUTSIDE" in text else []
            except ToolError:
                refused += 1
        try:  # the per-component resolution, under the same attack
            data = await asyncio.to_thread(fallback.read_bytes, "d/secret.txt", 1000)
            leaked += [data.decode()] if b"OUTSIDE" in data else []
            await asyncio.to_thread(fallback.write_bytes, "d/y.txt", b"fallback\n")
        except (ConfinementError, OSError):
            refused += 1
    swaps = await in_sandbox(sandbox, "_swapper.join(); print(_swaps[0])")
    assert int(swaps) > 100, "the sandbox thread did not race"
    assert naive_hits > 0, "the attack must reach outside through a plain open()"
    assert ok_reads > 0 and refused > 0  # both states of the race were met
    assert leaked == []
    assert outside_state(outside) == before  # nothing created or changed outside


async def test_fifos_never_block_a_tool(sandbox: Sandbox, dirs):
    ws, _ = dirs
    await in_sandbox(
        sandbox,
        "import os\nos.makedirs('pipes', exist_ok=True)\n"
        "for i in range(8): os.mkfifo(f'pipes/p{i}')\n"
        "open('pipes/note.txt', 'w').write('needle\\n')",
    )
    fifo = ws / "pipes" / "p0"
    reader = threading.Thread(target=fifo.read_text, daemon=True)
    reader.start()
    reader.join(1.0)
    assert reader.is_alive(), "a plain open() of the FIFO should block: the attack is real"
    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # let it go: EOF
    reader.join(PROMPT)

    tb = ToolBox(sandbox, ws)

    async def answer(name: str, args: dict) -> str:
        try:
            return (await asyncio.wait_for(tb.call(name, args), PROMPT)).text
        except ToolError as e:
            return f"refused: {e}"

    assert "is a fifo, not a regular file" in await answer("read_file", {"path": "pipes/p1"})
    assert "is a fifo" in await answer("write_file", {"path": "pipes/p1", "content": "x"})
    assert "is a fifo" in await answer("search_files", {"pattern": "x", "path": "pipes/p1"})
    assert await answer("search_files", {"pattern": "needle"}) == "pipes/note.txt:1: needle"
    listing = (await answer("list_files", {"path": "pipes"})).splitlines()
    assert "pipes/p1  (fifo, not read)" in listing
    assert (await answer("list_files", {"path": "pipes/p1"})) == "pipes/p1  (fifo, not read)"
    assert (ws / "pipes" / "p1").is_fifo()

    other_ws = ws / "other"
    other_ws.mkdir()
    (other_ws / "mine.txt").write_text("mine\n")
    other = ToolBox(None, other_ws)
    reads = [answer("read_file", {"path": f"pipes/p{i}"}) for i in range(8)]
    *refusals, mine = await asyncio.gather(
        *reads, asyncio.wait_for(other.call("list_files", {}), PROMPT)
    )
    assert all("is a fifo" in r for r in refusals)
    assert mine.text == "mine.txt  (5 B)"


async def test_file_tools_do_not_need_the_shared_default_pool(dirs):
    ws, _ = dirs
    loop = asyncio.get_running_loop()
    release = threading.Event()
    starved = ThreadPoolExecutor(max_workers=2)
    loop.set_default_executor(starved)
    try:
        for _ in range(2):
            loop.run_in_executor(None, release.wait)
        (ws / "mine").mkdir()
        (ws / "mine" / "a.txt").write_text("a\n")
        res = await asyncio.wait_for(ToolBox(None, ws).call("list_files", {"path": "mine"}), PROMPT)
        assert res.text == "mine/a.txt  (2 B)"
    finally:
        release.set()
        loop.set_default_executor(ThreadPoolExecutor())
        starved.shutdown()


async def test_slow_file_work_becomes_a_tool_error(tmp_path: Path):
    for i in range(300):
        sub = tmp_path / f"dir{i}"
        sub.mkdir()
        (sub / "a.txt").write_text("hay\n" * 200)
    tb = ToolBox(None, tmp_path)
    tb.file_timeout_s = 0.005
    with pytest.raises(ToolError, match=r"^search_files took longer than 0\.005 s"):
        await tb.call("search_files", {"pattern": "needle"})
    tb.file_timeout_s = PROMPT
    assert (await tb.call("search_files", {"pattern": "needle"})).text.startswith("no matches")


async def test_hard_link_to_an_outside_file_is_refused(sandbox: Sandbox, dirs):
    ws, outside = dirs
    # The sandbox cannot make this link: the outside file is not in its view at all, and a
    # link across its bind mounts fails with EXDEV. Without bwrap (fallback mode) it can, so
    # the test process makes the link, on the same filesystem, as such code would.
    target = outside / "config.py"
    target.write_text("TOKEN = 'outside'\n")
    os.link(target, ws / "linked.py")
    made = await in_sandbox(sandbox, "import os; print(os.stat('linked.py').st_nlink)")
    assert made == "2"  # the sandbox sees the link in its workspace
    tb = ToolBox(sandbox, ws)
    for name, args in [
        ("read_file", {"path": "linked.py"}),
        ("write_file", {"path": "linked.py", "content": "TOKEN = 'changed'\n"}),
        ("search_files", {"pattern": "TOKEN", "path": "linked.py"}),
    ]:
        with pytest.raises(ToolError, match="has 2 hard links"):
            await tb.call(name, args)
    found = await tb.call("search_files", {"pattern": "TOKEN"})
    assert found.text.startswith("no matches")
    assert target.read_text() == "TOKEN = 'outside'\n" and os.stat(target).st_nlink == 2


async def test_server_state_is_out_of_reach(sandbox: Sandbox, dirs):
    ws, _ = dirs
    await in_sandbox(
        sandbox,
        "import os\nos.makedirs('.codeagent/sessions', exist_ok=True)\n"
        "open('.codeagent/sessions/s.ipynb', 'w').write('needle state')",
    )
    state = ws / ".codeagent/sessions/s.ipynb"
    if not state.exists():
        # Under bubblewrap .codeagent/ is masked inside the sandbox, so its write stayed in
        # the mask; the tools must still refuse server state that exists on the host.
        state.parent.mkdir(parents=True, exist_ok=True)
        state.write_text("needle state")
    tb = ToolBox(sandbox, ws)
    for name, args in [
        ("read_file", {"path": ".codeagent/sessions/s.ipynb"}),
        ("write_file", {"path": ".codeagent/sessions/s.ipynb", "content": "{}"}),
        ("list_files", {"path": ".codeagent"}),
    ]:
        with pytest.raises(ToolError, match="the server's own state"):
            await tb.call(name, args)
    assert ".codeagent" not in (await tb.call("list_files", {})).text
    hits = (await tb.call("search_files", {"pattern": "needle"})).text
    assert "state" not in hits
    assert state.read_text() == "needle state"
