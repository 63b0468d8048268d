"""The shared zygote (``zygote_shared``): another process attaches to it instead of
starting its own; a fork dies with the process that asked for it, even one killed
outright; the zygote ends itself when idle, never while a fork lives; and a folder that is
not this user's alone is refused, since whoever can plant a socket there would answer as
the zygote."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from codeagent_jupyter.sandbox import Sandbox, SandboxLimits, bubblewrap
from codeagent_jupyter.sandbox.stop import started_at
from codeagent_jupyter.sandbox.zygote_host import ZygoteUnavailable
from codeagent_jupyter.sandbox.zygote_manager import manager_class
from codeagent_jupyter.sandbox.zygote_shared import STATE_FILE, SharedZygote

LIMITS = SandboxLimits(memory_mb=768, cell_timeout=60)
ASK_AND_HOLD = """
import sys, time
from pathlib import Path
from codeagent_jupyter.sandbox import SandboxLimits
from codeagent_jupyter.sandbox.zygote_shared import SharedZygote
zygote = SharedZygote(Path(sys.argv[1]), Path(sys.argv[2]))
zygote.ensure_started()
_, pid, lease = zygote.spawn(Path(sys.argv[1]), SandboxLimits())
print(zygote.root_pid, zygote.host_pid(pid), flush=True)
time.sleep(600)
"""


def _started(zygote: SharedZygote) -> SharedZygote:
    """``zygote``, started; a skip in one line where bubblewrap cannot run one here."""
    choice = bubblewrap.choose(network=False)
    if choice.bwrap is None:
        pytest.skip(bubblewrap.advice(choice))
    zygote.ensure_started()
    return zygote


@pytest.fixture
def short_path() -> Iterator[Path]:
    """A folder with a short path: the zygote's sockets live below it (107 bytes at most)."""
    path = Path(tempfile.mkdtemp(prefix="cz-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _gone(pid: int, started: str | None, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if started_at(pid) != started:
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def shared() -> Iterator[SharedZygote]:
    base = Path(tempfile.mkdtemp(prefix="cz-"))
    (base / "ws").mkdir()
    try:
        zygote = _started(SharedZygote(base / "ws", base / "rt"))
        try:
            yield zygote
        finally:
            zygote.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def test_another_process_attaches_instead_of_starting_one(shared: SharedZygote) -> None:
    code = (
        "import sys; from pathlib import Path\n"
        "from codeagent_jupyter.sandbox.zygote_shared import SharedZygote\n"
        "z = SharedZygote(Path(sys.argv[1]), Path(sys.argv[2])); z.ensure_started()\n"
        "print(z.root_pid)\n"
    )
    argv = [sys.executable, "-c", code, str(shared.workspaces), str(shared.root)]
    other = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    assert int(other.stdout) == shared.root_pid  # the same zygote, not a second one
    assert len(list(shared.root.glob(f"*/{STATE_FILE}"))) == 1
    # A sandbox forked from it by this process: the data stack is there already.
    sb = Sandbox(shared.workspaces, LIMITS, kernel_manager_class=manager_class(shared))
    async with sb:
        result = await sb.execute("import os, sys\nprint('pandas' in sys.modules, os.getuid())")
    assert "True 65534" in result.text, result.text
    assert started_at(shared.root_pid or 0) is not None  # closing a sandbox keeps the zygote


def test_a_fork_dies_with_the_process_that_asked_for_it(shared: SharedZygote) -> None:
    """The attack: a client killed outright (no shutdown, no atexit) must not leave its
    kernel running in a zygote that outlives it."""
    argv = [sys.executable, "-c", ASK_AND_HOLD, str(shared.workspaces), str(shared.root)]
    client = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    try:
        assert client.stdout is not None
        root, fork = (int(v) for v in client.stdout.readline().split())
        assert root == shared.root_pid
        started = started_at(fork)
        assert started is not None
        time.sleep(0.5)
        assert started_at(fork) == started  # it lives while its client does
        client.send_signal(signal.SIGKILL)
        client.wait(10)
        assert _gone(fork, started), "the fork outlived the process that asked for it"
        assert started_at(root) is not None  # the zygote goes on serving others
    finally:
        client.kill()
        client.wait(10)


def test_an_idle_zygote_ends_itself_but_not_while_a_fork_lives(short_path: Path) -> None:
    tmp_path = short_path
    (tmp_path / "ws").mkdir()
    zygote = _started(SharedZygote(tmp_path / "ws", tmp_path / "rt", idle_exit=0.5))
    try:
        root = zygote.root_pid
        assert root is not None
        root_started = started_at(root)
        _, _, lease = zygote.spawn(tmp_path / "ws", SandboxLimits())
        time.sleep(2)
        assert started_at(root) == root_started, "ended while a fork was alive"
        lease.close()
        assert _gone(root, root_started), "an idle zygote with no fork did not end"
        assert not zygote.socket.exists()
        again = SharedZygote(tmp_path / "ws", tmp_path / "rt", idle_exit=0.5)
        again.ensure_started()  # the state file names a process that is gone: a new one
        assert again.root_pid not in (None, root)
        pid = again.root_pid or 0
        started = started_at(pid)
        again.stop()
        assert _gone(pid, started), "stop() left the zygote running"
    finally:
        zygote.stop()


@pytest.mark.parametrize("how", ["link", "open mode", "another user's"])
def test_a_folder_not_this_users_alone_is_refused(tmp_path: Path, how: str) -> None:
    """Whoever can put a socket where the zygote's would be answers as the zygote: it would
    be told every workspace and handed kernels to start."""
    runtime = tmp_path / "runtime"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    if how == "link":
        runtime.symlink_to(elsewhere)
    else:
        runtime.mkdir(mode=0o700)
        if how == "open mode":
            runtime.chmod(0o755)
        elif os.geteuid() == 0:
            os.chown(runtime, 65534, 65534)
        else:
            pytest.skip("only root can give a folder to another user")
    (tmp_path / "ws").mkdir()
    with pytest.raises(ZygoteUnavailable, match="not a folder of this user's alone"):
        SharedZygote(tmp_path / "ws", runtime).start()
    assert not list(elsewhere.iterdir())


def test_the_state_file_is_only_a_hint(tmp_path: Path) -> None:
    """A state file naming some other live process is not believed: the socket must answer
    as a zygote too; nothing is signalled on its word."""
    (tmp_path / "ws").mkdir()
    zygote = SharedZygote(tmp_path / "ws", tmp_path / "rt")
    folder = zygote.folder
    folder.mkdir(parents=True, mode=0o700)
    (tmp_path / "rt").chmod(0o700)
    me = os.getpid()
    (folder / STATE_FILE).write_text(json.dumps({"pid": me, "started": started_at(me)}))
    zygote.kernels = folder
    zygote.socket = folder / "zygote.sock"
    assert not zygote._attach()
