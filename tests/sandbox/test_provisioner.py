"""The kernel spec on its own (as JupyterLab starts it): secrets never reach the kernel."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from jupyter_client import AsyncKernelManager

from codeagent_jupyter.sandbox.provisioner import SandboxProvisioner


async def test_plain_kernel_manager_gets_scrubbed_env_and_private_ipc(tmp_path: Path) -> None:
    os.environ["CODEAGENT_TEST_API_KEY"] = "codeagent-test-secret-4"
    km = AsyncKernelManager(kernel_name="codeagent-sandbox")
    try:
        # No env argument: jupyter_client hands the whole server environment over.
        await km.start_kernel(cwd=str(tmp_path), stdout=subprocess.DEVNULL)
        kc = km.client()
        kc.start_channels()
        await kc.wait_for_ready(timeout=60)
        reply = await kc.execute_interactive(
            "import os; secret = [k for k in os.environ if 'CODEAGENT_TEST' in k]",
            user_expressions={"s": "secret", "cwd": "os.getcwd()"},
            timeout=30,
        )
        kc.stop_channels()
    finally:
        os.environ.pop("CODEAGENT_TEST_API_KEY", None)
        connection_dir = Path(km.connection_file).parent
        provisioner = km.provisioner
        await km.shutdown_kernel(now=True)
    assert isinstance(provisioner, SandboxProvisioner)
    assert km.transport == "ipc" and connection_dir.name.startswith("codeagent-sbx-")
    exprs = reply["content"]["user_expressions"]
    assert exprs["s"]["data"]["text/plain"] == "[]"
    assert exprs["cwd"]["data"]["text/plain"] == repr(str(tmp_path))
    assert not connection_dir.exists()  # removed with the kernel


async def test_kernel_starts_when_the_temp_dir_is_too_deep_for_ipc_sockets(tmp_path: Path) -> None:
    # AF_UNIX addresses hold 107 bytes: under a deep TMPDIR (a test's own folder, a CI
    # workspace) `<tmp>/codeagent-sbx-…/kernel-ipc-N` does not fit and zmq refuses to bind.
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    saved, tempfile.tempdir = tempfile.tempdir, str(deep)
    km = AsyncKernelManager(kernel_name="codeagent-sandbox")
    try:
        await km.start_kernel(cwd=str(tmp_path), stdout=subprocess.DEVNULL)
        kc = km.client()
        kc.start_channels()
        await kc.wait_for_ready(timeout=60)
        reply = await kc.execute_interactive("6 * 7", user_expressions={"x": "6 * 7"}, timeout=30)
        kc.stop_channels()
    finally:
        tempfile.tempdir = saved
        connection_dir = Path(km.connection_file).parent
        await km.shutdown_kernel(now=True)
    assert reply["content"]["user_expressions"]["x"]["data"]["text/plain"] == "42"
    assert len(os.fsencode(connection_dir / "kernel-ipc-99")) <= 107
    assert not connection_dir.exists()
