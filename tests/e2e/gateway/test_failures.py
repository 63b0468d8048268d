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
from tests.e2e.gateway.conftest import Gateway, gateway_kernels, start_gateway, stop_gateway

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


class Relay:
    """A TCP relay in front of the gateway that the test cuts, as a network drop would."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.writers: list[asyncio.StreamWriter] = []
        self.server: asyncio.AbstractServer | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writers += [writer, up_writer]

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
            dst.close()

        await asyncio.gather(
            pipe(reader, up_writer), pipe(up_reader, writer), return_exceptions=True
        )

    def cut(self) -> None:
        for writer in self.writers:
            writer.transport.abort()
        self.writers.clear()

    async def close(self) -> None:
        self.cut()
        if self.server is not None:
            self.server.close()


async def test_a_dropped_socket_is_reconnected_and_the_cell_completes(
    gateway: Gateway, workspace: Path
) -> None:
    relay = Relay(int(gateway.url.rsplit(":", 1)[1]))
    url = await relay.start()
    try:
        box = make_backend("gateway", url, gateway.token).create(workspace, LIMITS)
        async with box:
            await box.execute("kept = 7")
            code = "import time; print('before', flush=True); time.sleep(2); print('after')"
            running = asyncio.ensure_future(box.execute(code))
            await asyncio.sleep(0.8)
            relay.cut()
            result = await running
            assert result.status == "ok", result
            assert "after" in result.text
            assert (await box.execute("kept")).text == "7"  # the same kernel, state kept
    finally:
        await relay.close()


async def test_kernels_the_gateway_culls_are_never_handed_out(tmp_path: Path) -> None:
    culling = (
        "--MappingKernelManager.cull_idle_timeout=2",
        "--MappingKernelManager.cull_interval=1",
        "--MappingKernelManager.cull_connected=True",  # pooled kernels hold a socket
    )
    gateway = start_gateway(tmp_path, *culling)
    try:
        workspace = gateway.root / "w"
        workspace.mkdir()
        backend = make_backend("gateway", gateway.url, gateway.token)
        pool = SandboxPool(size=1, workdir=workspace, limits=LIMITS, backend=backend)
        await pool.start()
        try:
            pooled = pool._ready[0].kernel_id
            for _ in range(100):  # the gateway's own culler, not us, ends it
                listed = {str(k["id"]) for k in gateway_kernels(gateway)}
                if pooled not in listed:
                    break
                await asyncio.sleep(0.2)
            lines = gateway.log_text().splitlines()
            assert any("Culling" in line and str(pooled) in line for line in lines)
            box = await pool.acquire()
            try:
                assert box.kernel_id != pooled
                assert (await box.execute("3 + 3")).text == "6"
            finally:
                await box.shutdown()
        finally:
            await pool.shutdown()
    finally:
        stop_gateway(gateway)
