"""A kernel that dies mid-cell is ``died`` quickly with the gateway's default settings, and a
kernel busy in C code holding the GIL (which cannot answer a probe either) is not.

The module's gateway runs with the default restarter (it polls the kernel process every 3 s);
a second gateway whose restarter would wait a minute proves the detection is the sandbox's
own. Times are bounded generously here; ``bench/sandbox_gateway.py`` measures them.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from codeagent_jupyter.sandbox import SandboxLimits
from codeagent_jupyter.sandbox.backend import make_backend
from tests.e2e.gateway.conftest import Gateway, gateway_kernels, start_gateway, stop_gateway

LIMITS = SandboxLimits(cell_timeout=60)
KILLED_MID_CELL = (
    "import os, threading, time\n"
    "print('started', flush=True)\n"
    "threading.Timer(0.5, os.kill, (os.getpid(), 9)).start()\n"
    "time.sleep(50)"
)
"""A cell that is killed 0.5 s in, while it sleeps (as the OOM killer would end it)."""


async def test_kernel_killed_mid_cell_is_died_and_replaced(
    gateway: Gateway, workspace: Path
) -> None:
    box = make_backend("gateway", gateway.url, gateway.token).create(workspace, LIMITS)
    async with box:
        await box.execute("kept = 1")
        first = box.kernel_id
        t = time.monotonic()
        result = await box.execute(KILLED_MID_CELL)
        waited = time.monotonic() - t
        assert result.status == "died", result
        assert "kernel died" in result.note and "state lost" in result.note
        assert "started" in result.text  # what it printed before it died is kept
        assert waited < 15, f"died reported after {waited:.1f} s (the cell sleeps 50 s)"
        after = await box.execute("'kept' in dir()")
        assert after.status == "ok" and "False" in after.text
        assert box.kernel_id != first
    listed = {str(k["id"]) for k in gateway_kernels(gateway)}
    assert first not in listed and box.kernel_id not in listed


async def test_a_cell_holding_the_gil_in_c_code_is_not_dead(
    gateway: Gateway, workspace: Path
) -> None:
    code = (
        "import time, numpy\n"
        "t = time.monotonic()\n"
        "total = sum(range(6 * 10**7))\n"  # one C call: the GIL is held throughout
        "held = time.monotonic() - t\n"
        "time.sleep(0.5)\n"
        "m = numpy.ones((1500, 1500)) @ numpy.ones((1500, 1500))\n"
        "print(total, float(m[0, 0]), held > 0.6)"
    )
    box = make_backend("gateway", gateway.url, gateway.token).create(workspace, LIMITS)
    async with box:
        await box.execute("kept = 'yes'")
        result = await box.execute(code)
        assert result.status == "ok", result
        assert result.text.split()[:2] == [str(sum(range(6 * 10**7))), "1500.0"]
        # The GIL was held longer than the watcher's grace, so the process check ran.
        assert result.text.split()[2] == "True", result.text
        assert "yes" in (await box.execute("kept")).text  # the same kernel


async def test_death_is_noticed_by_the_sandbox_not_the_gateway_restarter(tmp_path: Path) -> None:
    gateway = start_gateway(tmp_path, "--KernelRestarter.time_to_dead=60")
    try:
        workspace = gateway.root / "w"
        workspace.mkdir()
        box = make_backend("gateway", gateway.url, gateway.token).create(workspace, LIMITS)
        async with box:
            result = await asyncio.wait_for(box.execute(KILLED_MID_CELL), 30)
            assert result.status == "died", result
            assert "no answer" in result.note and "state lost" in result.note
            assert (await box.execute("6 * 7")).text == "42"
    finally:
        stop_gateway(gateway)
