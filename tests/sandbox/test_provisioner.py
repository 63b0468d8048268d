"""The kernel spec on its own (as JupyterLab starts it): secrets never reach the kernel."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from jupyter_client import AsyncKernelManager

from codeagent_jupyter.sandbox import leftovers
from codeagent_jupyter.sandbox.provisioner import SandboxProvisioner


async def _ask(km: AsyncKernelManager, workdir: Path, code: str, **expressions: str) -> dict:
    """Start the kernel spec as JupyterLab does (no env argument: jupyter_client hands the
    whole environment over), run ``code``; the reply's user expressions."""
    await km.start_kernel(cwd=str(workdir), stdout=subprocess.DEVNULL)
    kc = km.client()
    kc.start_channels()
    await kc.wait_for_ready(timeout=60)
    reply = await kc.execute_interactive(code, user_expressions=expressions, timeout=30)
    kc.stop_channels()
    return {k: v["data"]["text/plain"] for k, v in reply["content"]["user_expressions"].items()}


async def test_plain_kernel_manager_gets_scrubbed_env_and_private_ipc(tmp_path: Path) -> None:
    os.environ["CODEAGENT_TEST_API_KEY"] = "codeagent-test-secret-4"
    km = AsyncKernelManager(kernel_name="codeagent-sandbox")
    try:
        code = "import os; secret = [k for k in os.environ if 'CODEAGENT_TEST' in k]"
        exprs = await _ask(km, tmp_path, code, s="secret", cwd="os.getcwd()")
    finally:
        os.environ.pop("CODEAGENT_TEST_API_KEY", None)
        connection_dir = Path(km.connection_file).parent
        provisioner = km.provisioner
        await km.shutdown_kernel(now=True)
    assert isinstance(provisioner, SandboxProvisioner)
    assert km.transport == "ipc" and connection_dir.name.startswith("codeagent-sbx-")
    assert exprs == {"s": "[]", "cwd": repr(str(tmp_path))}
    assert not connection_dir.exists()  # removed with the kernel


async def test_kernel_starts_when_the_temp_dir_is_too_deep_for_ipc_sockets(tmp_path: Path) -> None:
    # AF_UNIX addresses hold 107 bytes: under a deep TMPDIR (a test's own folder, a CI
    # workspace) `<tmp>/codeagent-sbx-…/kernel-ipc-N` does not fit and zmq refuses to bind.
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    saved, tempfile.tempdir = tempfile.tempdir, str(deep)
    km = AsyncKernelManager(kernel_name="codeagent-sandbox")
    try:
        exprs = await _ask(km, tmp_path, "", x="6 * 7")
    finally:
        tempfile.tempdir = saved
        connection_dir = Path(km.connection_file).parent
        await km.shutdown_kernel(now=True)
    assert exprs == {"x": "42"}
    assert len(os.fsencode(connection_dir / "kernel-ipc-99")) <= 107
    assert not connection_dir.exists()


_OWNER = """
import asyncio, sys, tempfile
tempfile.tempdir = sys.argv[1]
from jupyter_client import AsyncKernelManager
async def main():
    km = AsyncKernelManager(kernel_name="codeagent-sandbox")
    await km.start_kernel(cwd=sys.argv[2])
    print(km.connection_file, flush=True)
    await asyncio.sleep(600)
asyncio.run(main())
"""


async def test_folders_of_a_killed_owner_go_with_the_next_kernel(tmp_path: Path) -> None:
    # A short base: under a deep one the private folders would move to /tmp (see above).
    base = Path(tempfile.mkdtemp(prefix="sweep-", dir="/tmp"))
    try:
        await _killed_owner(base, tmp_path / "w", tmp_path / "outside")
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def _killed_owner(base: Path, work: Path, outside: Path) -> None:
    for folder in (work, outside):
        folder.mkdir()
    (outside / "keep").write_text("not the sweeper's")
    # A server with a kernel, killed with SIGKILL: no cleanup of its private folder runs.
    owner = subprocess.Popen(
        [sys.executable, "-c", _OWNER, str(base), str(work)], stdout=subprocess.PIPE, text=True
    )
    try:
        left = Path(owner.stdout.readline().strip()).parent
    finally:
        owner.kill()
        owner.wait()
    assert left.is_dir() and left.parent == base
    # What is not provably ours and orphaned stays: another owner alive (this process), no
    # owner file, an owner file that is a FIFO (would block a reader), a planted symlink.
    alive, unowned, fifo = (base / f"codeagent-sbx-{n}" for n in ("alive", "unowned", "fifo"))
    for folder in (alive, unowned, fifo):
        folder.mkdir()
    leftovers.mark_owner(alive)
    os.mkfifo(fifo / "owner")
    (base / "codeagent-sbx-link").symlink_to(outside, target_is_directory=True)

    saved, tempfile.tempdir = tempfile.tempdir, str(base)
    km = AsyncKernelManager(kernel_name="codeagent-sandbox")
    try:
        await km.start_kernel(cwd=str(work), stdout=subprocess.DEVNULL)
        mine = Path(km.connection_file).parent
    finally:
        tempfile.tempdir = saved
        await km.shutdown_kernel(now=True)
    assert mine.parent == base and not left.exists()
    assert alive.is_dir() and unowned.is_dir() and fifo.is_dir()
    assert (base / "codeagent-sbx-link").is_symlink() and (outside / "keep").exists()
