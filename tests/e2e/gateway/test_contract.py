"""The sandbox contract, the same tests over both backends: local kernels and a real gateway."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from codeagent_jupyter.sandbox import SandboxLimits
from codeagent_jupyter.sandbox.backend import make_backend
from tests.e2e.gateway.conftest import Gateway, gateway_kernels

LIMITS = SandboxLimits(memory_mb=300, cell_timeout=4, output_bytes=200_000)


@pytest_asyncio.fixture(params=["local", "gateway"])
async def sandbox(
    request: pytest.FixtureRequest, gateway: Gateway, workspace: Path
) -> AsyncIterator[Any]:
    if request.param == "local":
        backend = make_backend("local")
    else:
        backend = make_backend("gateway", gateway.url, gateway.token)
    box = backend.create(workspace, LIMITS, "alice")
    await box.start()
    try:
        yield box
    finally:
        await box.shutdown()


async def test_state_outputs_and_errors(sandbox: Any) -> None:
    assert (await sandbox.execute("x = 41")).status == "ok"
    result = await sandbox.execute("print('seen'); x + 1")
    assert result.status == "ok" and "seen" in result.text and "42" in result.text
    failed = await sandbox.execute("1 / 0")
    assert failed.status == "error" and "ZeroDivisionError" in failed.text


async def test_run_command_sees_the_workspace(sandbox: Any) -> None:
    (sandbox.workdir / "data.txt").write_text("shared\n")
    listed = await sandbox.run_command("cat data.txt")
    assert listed.status == "ok" and "shared" in listed.text
    failed = await sandbox.run_command("exit 3")
    assert failed.status == "error" and "exit code 3" in failed.note


async def test_enforcement_reports_applied_values(sandbox: Any) -> None:
    assert sandbox.enforcement["limits"]["memory_mb"] == 300
    assert sandbox.limits.memory_mb == 300
    result = await sandbox.execute("x = bytearray(500 * 1024 * 1024)")
    assert result.status == "error" and "MemoryError" in result.text


async def test_every_one_of_3000_fast_lines_arrives(sandbox: Any) -> None:
    result = await sandbox.execute("for i in range(3000):\n    print(f'line {i}')")
    text = "".join(o["text"] for o in result.outputs if o["output_type"] == "stream")
    assert result.status == "ok"
    assert text.splitlines() == [f"line {i}" for i in range(3000)]


async def test_output_from_a_thread_is_kept(sandbox: Any) -> None:
    code = (
        "import threading, time, sys\n"
        "def late():\n    time.sleep(0.3); print('late line', flush=True)\n"
        "t = threading.Thread(target=late); t.start(); t.join()"
    )
    result = await sandbox.execute(code)
    assert "late line" in result.text


async def test_timeout_interrupts_and_keeps_state(sandbox: Any) -> None:
    await sandbox.execute("kept = 'yes'")
    result = await sandbox.execute("import time; time.sleep(30)")
    assert result.status == "timeout" and "state kept" in result.note
    assert "yes" in (await sandbox.execute("kept")).text


async def test_kernel_death_mid_cell_is_died_then_a_fresh_kernel(sandbox: Any) -> None:
    await sandbox.execute("gone = 1")
    result = await sandbox.execute("import os; os.kill(os.getpid(), 9)")
    assert result.status == "died" and "state lost" in result.note
    after = await sandbox.execute("'gone' in dir()")
    assert after.status == "ok" and "False" in after.text


async def test_restarts_all_succeed(sandbox: Any) -> None:
    remote = type(sandbox).__name__ == "GatewaySandbox"
    for i in range(20 if remote else 5):  # the gateway's restart path is the one in doubt
        await sandbox.execute(f"n = {i}")
        await sandbox.restart()
        result = await sandbox.execute("'n' in dir()")
        assert result.status == "ok" and "False" in result.text, f"restart {i}: {result}"


async def test_gateway_lists_the_kernel_as_the_sandbox_spec(
    gateway: Gateway, workspace: Path
) -> None:
    box = make_backend("gateway", gateway.url, gateway.token).create(workspace, LIMITS)
    async with box:
        kernel_id = box.kernel_id
        listed = {k["id"]: k["name"] for k in gateway_kernels(gateway)}
        assert listed[kernel_id] == "codeagent-sandbox"
    assert kernel_id not in {k["id"] for k in gateway_kernels(gateway)}
