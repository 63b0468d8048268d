"""Cells that kill or wedge the kernel: it is restarted and the result says what happened."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from codeagent_jupyter.sandbox import Sandbox, SandboxLimits

from .conftest import SMALL, needs

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def victim(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Sandbox]:
    async with Sandbox(
        workdir=tmp_path_factory.mktemp("victim"), limits=SMALL, interrupt_grace=1.0
    ) as sb:
        yield sb


@pytest.mark.parametrize(
    ("code", "said"),
    [
        ("import os; os._exit(3)", "kernel exited with code 3"),
        (
            "import os, signal; os.kill(os.getpid(), signal.SIGKILL)",
            "SIGKILL: out of memory",
        ),
        ("import ctypes; ctypes.string_at(0)", "SIGSEGV"),
    ],
)
async def test_dead_kernel_is_detected_restarted_and_reported(
    victim: Sandbox, code: str, said: str
) -> None:
    await victim.execute("state = 1")
    # The pause lets the output leave the kernel before it dies: what was sent is kept.
    r = await victim.execute(
        f"import time\nprint('last words', flush=True)\ntime.sleep(0.3)\n{code}"
    )
    assert r.status == "died"
    assert said in r.note and "restarted; state lost" in r.note
    assert r.duration_s < 2.8  # detected quickly (the restart is not counted)
    assert "last words" in r.text
    r = await victim.execute("print(1); state")
    assert r.status == "error" and "NameError" in r.text and r.text.startswith("1")


async def test_cell_ignoring_interrupt_gets_kernel_restarted(victim: Sandbox) -> None:
    await victim.execute("state = 1")
    code = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass"
    r = await victim.execute(code)
    assert r.status == "timeout"
    assert "did not stop within 1 s" in r.note and "state lost" in r.note
    assert (await victim.execute("1 + 1")).text == "2"


async def test_fork_loop_is_capped(tmp_path: Path) -> None:
    limits = SandboxLimits(**{**SMALL.to_dict(), "max_processes": 32})
    async with Sandbox(workdir=tmp_path, limits=limits) as sb:
        needs(sb, "processes")
        code = (
            "import os, signal, time\n"
            "children, err = [], None\n"
            "for _ in range(200):\n"
            "    try:\n"
            "        pid = os.fork()\n"
            "    except OSError as e:\n"
            "        err = type(e).__name__\n"
            "        break\n"
            "    if pid == 0:\n"
            "        time.sleep(60)\n"
            "        os._exit(0)\n"
            "    children.append(pid)\n"
            "for pid in children:\n"
            "    os.kill(pid, signal.SIGKILL)\n"
            "    os.waitpid(pid, 0)\n"
            "print(len(children), err)"
        )
        r = await sb.execute(code)
        assert r.status == "ok", r.text
        made, err = r.text.split()
        assert err == "BlockingIOError" and int(made) < 200
        if sb.enforcement["processes"] == "cgroup":  # an RLIMIT_NPROC is per user: fuzzier
            assert int(made) < limits.max_processes
        assert (await sb.execute("print('alive')")).text == "alive"


async def test_cpu_limit_kills_and_reports(tmp_path: Path) -> None:
    """A thread left spinning after its cell gets one more per-cell budget, then the kernel ends."""
    limits = SandboxLimits(**{**SMALL.to_dict(), "cpu_seconds": 3, "cell_timeout": 30})
    async with Sandbox(workdir=tmp_path, limits=limits) as sb:
        needs(sb, "cpu")
        code = "import threading\ndef spin():\n    while True: pass\n"
        assert (await sb.execute(code + "threading.Thread(target=spin).start()")).status == "ok"
        for _ in range(150):
            if not sb.is_alive():
                break
            await asyncio.sleep(0.2)
        r = await sb.execute("print('fresh')")
        assert "SIGXCPU" in r.note and "while idle" in r.note and "restarted" in r.note
        assert r.text == "fresh"
