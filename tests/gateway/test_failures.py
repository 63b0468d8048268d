"""A gateway's failure modes: lost gateway, wrong token, culled pooled kernels."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import urllib.request
from pathlib import Path

import pytest

from codeagent_jupyter.errors import SandboxError
from codeagent_jupyter.sandbox import SandboxLimits, SandboxPool
from codeagent_jupyter.sandbox.backend import make_backend
from tests.gateway.conftest import Gateway, start_gateway, stop_gateway

LIMITS = SandboxLimits(cell_timeout=30)


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            found.update(children)
            todo.extend(children)
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


async def test_gateway_killed_mid_cell_is_an_exec_result(tmp_path: Path) -> None:
    gateway = start_gateway(tmp_path)
    try:
        workspace = gateway.root / "w"
        workspace.mkdir()
        box = make_backend("gateway", gateway.url, gateway.token).create(workspace, LIMITS)
        await box.start()
        kernels = _descendants(gateway.process.pid)
        assert kernels, "the gateway started no kernel process"
        running = asyncio.ensure_future(box.execute("import time; time.sleep(25)"))
        await asyncio.sleep(1.0)
        os.kill(gateway.process.pid, signal.SIGKILL)
        result = await running
        assert result.status == "died"
        assert "gateway unreachable" in result.note
        again = await box.execute("1 + 1")
        assert again.status == "died" and "gateway unreachable" in again.note
        await box.shutdown()  # the gateway is gone: no error, nothing left to do
        for _ in range(50):  # bubblewrap ends the kernel with its parent, the gateway
            if not any(_alive(pid) for pid in kernels):
                break
            await asyncio.sleep(0.1)
        assert not any(_alive(pid) for pid in kernels), "a kernel outlived its gateway"
        assert list(workspace.iterdir()) in ([], [workspace / ".codeagent"])
    finally:
        stop_gateway(gateway)


async def test_wrong_token_is_a_clear_error(gateway: Gateway, workspace: Path) -> None:
    box = make_backend("gateway", gateway.url, "not-the-token").create(workspace, LIMITS)
    with pytest.raises(SandboxError, match=r"HTTP 401 .*check the gateway token"):
        await box.start()


async def test_token_comes_from_the_environment(
    gateway: Gateway, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEAGENT_GATEWAY_TOKEN", gateway.token)
    async with make_backend("gateway", gateway.url).create(workspace, LIMITS) as box:
        assert (await box.execute("6 * 7")).text == "42"


async def test_unreachable_gateway_fails_to_start_with_one_line(workspace: Path) -> None:
    box = make_backend("gateway", "http://127.0.0.1:9", "t").create(workspace, LIMITS)
    with pytest.raises(SandboxError, match="gateway unreachable"):
        await box.start()


async def test_culled_pooled_kernel_is_never_handed_out(gateway: Gateway, workspace: Path) -> None:
    backend = make_backend("gateway", gateway.url, gateway.token)
    pool = SandboxPool(size=1, workdir=workspace, limits=LIMITS, backend=backend)
    await pool.start()
    try:
        culled = pool._ready[0].kernel_id  # what the gateway's culler would delete
        request = urllib.request.Request(
            f"{gateway.url}/api/kernels/{culled}",
            method="DELETE",
            headers={"Authorization": f"token {gateway.token}"},
        )
        urllib.request.urlopen(request, timeout=10).close()
        box = await pool.acquire()
        try:
            assert box.kernel_id != culled
            assert (await box.execute("2 + 2")).text == "4"
        finally:
            await box.shutdown()
    finally:
        await pool.shutdown()
    assert json.dumps(pool.status()["failures"]) == "0"
