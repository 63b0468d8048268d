"""The host's side of the zygote: start it in its bubblewrap, ask it for sandboxes.

One ``Zygote`` serves one configuration: one folder holding the workspaces it may serve
(``workspaces``), one Python environment, one preload list. The kernel folders live in a
folder of its own (``kernels``, 0700, made here); the zygote's socket is there too, so no
process but the host's user and the zygote can reach it, and each child covers that folder
with its own kernel folder alone (``zygote._cover``). See docs/security.md, "The zygote".
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from jupyter_client.connect import write_connection_file

from ..config import SandboxLimits
from . import bubblewrap, cgroup
from .inner import MIB
from .isolation import INNER_ENV, LIMITS_ENV, SANDBOX_UID, WORKDIR_ENV, _system_binds, scrub_env
from .launcher import cgroup_memory_bytes
from .paths import PRIVATE_DIR_PREFIX, hidden_paths, python_paths, workspace_problem

SOCKET_NAME = "zygote.sock"
_DETACH = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.setsid()\n"
    "    os.execv(sys.argv[1], sys.argv[1:])\n"
    "print(pid, flush=True)\n"
)
"""Starts argv in a session of its own and says its pid, then exits: the zygote's
bubblewrap is then no child of ours (``Zygote._launch(detach=True)``)."""
ASK_TIMEOUT_S = 10.0
"""Longest wait for the zygote's answer to a question (it answers between forks)."""


def _code_paths() -> list[Path]:
    """``python_paths``, with this package's own folder even when it is the working
    directory (a checkout installed in editable mode, run from its root); never ``/tmp``
    itself (a script run from there puts it on ``sys.path``): the zygote's own ``/tmp``
    must stay its private, writable one."""
    paths = [p for p in python_paths() if not Path("/tmp").is_relative_to(p)]
    package = Path(__file__).resolve().parents[2]
    if not any(package.is_relative_to(p) for p in paths):
        paths.append(package)
    return paths


def _line(conn: socket.socket, limit: int = 4096) -> bytes:
    """One reply line, read without a buffer that could take more than the line (the
    connection stays open after it, as a lease)."""
    got = b""
    while not got.endswith(b"\n") and len(got) < limit:
        chunk = conn.recv(1)
        if not chunk:
            break
        got += chunk
    return got


class ZygoteUnavailable(RuntimeError):
    """No zygote here (no bubblewrap, no user namespaces): the cold start stays."""


class Zygote:
    """A running zygote and the kernels it forked; ``close`` ends them all."""

    def __init__(self, workspaces: Path) -> None:
        self.workspaces = workspaces.resolve()
        self.kernels = Path()
        """The kernel folders' folder (0700), made by ``start``, removed by ``close``."""
        self.socket = Path()
        self.process: subprocess.Popen[bytes] | None = None
        self.label = ""
        self._starting = threading.Lock()

    def ensure_started(self) -> None:
        """Start the zygote unless it runs; one that died is ended and started again.

        A server's pool starts several sandboxes at once, each in a thread: one zygote
        starts, the others wait for it."""
        with self._starting:
            if self.process is not None and self.process.poll() is None:
                return
            self.close()
            self.start()

    def start(self, timeout: float = 120.0) -> None:
        """Launch the zygote and wait until it has imported the data stack."""
        self.kernels = Path(tempfile.mkdtemp(prefix="codeagent-zygote-"))
        self._launch(["--die-with-parent"], [])

    def _launch(
        self, bwrap_options: list[str], zygote_options: list[str], detach: bool = False
    ) -> int:
        """Start the zygote's bubblewrap serving ``self.kernels`` (made by the caller); read
        its "ready"; its pid. ``detach``: started by a shell that exits at once, so the
        zygote is no child of this process (nothing to reap, nothing tied to its life)."""
        choice = bubblewrap.choose(network=False)
        if choice.bwrap is None:
            raise ZygoteUnavailable(bubblewrap.advice(choice))
        self.label = choice.bwrap.label
        self.socket = self.kernels / SOCKET_NAME
        argv = [choice.bwrap.path, *bwrap_options, "--new-session", "--unshare-user"]
        argv += ["--uid", "0", "--gid", "0", "--cap-add", "ALL", "--unshare-pid"]
        argv += ["--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try"]
        argv += _system_binds()
        argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        bound = [self.workspaces, self.kernels]
        for path in _code_paths():
            argv += ["--ro-bind", str(path), str(path)]
        for path in bound:
            argv += ["--bind", str(path), str(path)]
        for path in hidden_paths():
            if any(path.is_relative_to(b) and path != b for b in bound):
                argv += ["--tmpfs" if path.is_dir() else "--ro-bind", *(
                    [] if path.is_dir() else ["/dev/null"]), str(path)]  # fmt: skip
        argv += ["--remount-ro", "/", "--chdir", "/"]
        argv += [sys.executable, "-m", "codeagent_jupyter.sandbox.zygote", str(self.socket)]
        argv += zygote_options
        env = scrub_env(os.environ)
        env.update(MPLCONFIGDIR="/tmp/mpl", HOME="/tmp", MALLOC_ARENA_MAX="2")
        # Arrow's allocator (mimalloc) reserves no arena ahead: the zygote makes a first
        # DataFrame, and a fork would inherit a reservation (1 GiB) over its RLIMIT_DATA.
        env["MIMALLOC_ARENA_RESERVE"] = "0"
        env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # debugpy, imported ahead, stays quiet
        if detach:
            argv = [sys.executable, "-c", _DETACH, *argv]
        stderr = self._stderr()
        try:
            self.process = subprocess.Popen(
                argv,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                start_new_session=True,
            )
        finally:
            if stderr is not None:
                os.close(stderr)
        assert self.process.stdout is not None
        pid = self.process.pid
        if detach:
            pid = int(self.process.stdout.readline() or 0)
            self.process.wait()
        line = self.process.stdout.readline()  # "ready", or nothing when it failed
        if line.strip() != b"ready":
            self.close()
            raise ZygoteUnavailable("the zygote did not start")
        return pid

    def _stderr(self) -> int | None:
        """Where the zygote's complaints go: this process's stderr (a shared zygote, which
        outlives it, writes to a file of its own)."""
        return None

    @property
    def root_pid(self) -> int | None:
        """The host's pid of the zygote's bubblewrap, the root of every fork's process tree."""
        return self.process.pid if self.process is not None else None

    def _ask(self, request: dict[str, Any]) -> dict[str, Any]:
        with socket.socket(socket.AF_UNIX) as conn:
            conn.settimeout(ASK_TIMEOUT_S)
            conn.connect(str(self.socket))
            conn.sendall(json.dumps(request).encode() + b"\n")
            reply = conn.makefile("rb").readline()
        if not reply:
            raise ZygoteUnavailable("the zygote did not answer")
        return dict(json.loads(reply))

    def spawn(
        self,
        workspace: Path,
        limits: SandboxLimits,
        args: list[str] | None = None,
        kernel_id: str = "",
    ) -> tuple[Path, int, socket.socket]:
        """Fork a kernel for ``workspace``; its connection file, its pid in the zygote, and
        its lease: the connection the request came on, which the caller keeps open as long
        as the kernel may live (closed, even by this process's death, the fork is killed).

        With a ``kernel_id`` the fork is moved into that kernel's own cgroup (``cgroup``) before
        it may go on, as a cold launcher moves itself.
        """
        workspace = workspace.resolve()
        problem = workspace_problem(workspace)
        if problem:
            raise ValueError(problem)
        if not workspace.is_relative_to(self.workspaces):
            raise ValueError(f"{workspace} is not a workspace under {self.workspaces}")
        kernel_dir = Path(tempfile.mkdtemp(prefix=PRIVATE_DIR_PREFIX, dir=self.kernels))
        os.chmod(kernel_dir, 0o777)  # the kernel is uid 65534 inside; the folder is hidden
        connection_file = kernel_dir / "kernel.json"
        write_connection_file(str(connection_file), transport="ipc", ip=str(kernel_dir / "k"))
        os.chmod(connection_file, 0o644)
        request = {
            "connection_file": str(connection_file),
            "workspace": str(workspace),
            "workspaces": str(self.workspaces),
            "kernel_dir": str(kernel_dir),
            "kernels": str(self.kernels),
            "tmp_bytes": max(limits.file_size_mb, 64) * MIB,
            "args": args or [],
        }
        conn = socket.socket(socket.AF_UNIX)
        conn.settimeout(ASK_TIMEOUT_S)  # the exchange; the lease is held, never read
        try:
            conn.connect(str(self.socket))
            conn.sendall(json.dumps(request).encode() + b"\n")
            reply = _line(conn)
            if not reply:
                raise ZygoteUnavailable("the zygote did not answer")
            pid = int(json.loads(reply)["pid"])
            enforcement = self._enforce(pid, limits, kernel_id)
            env = scrub_env(os.environ)
            env[LIMITS_ENV] = json.dumps(limits.to_dict())
            env[WORKDIR_ENV] = str(workspace)
            env.update(MALLOC_ARENA_MAX="2", PYDEVD_DISABLE_FILE_VALIDATION="1")
            env[INNER_ENV] = json.dumps({"enforcement": enforcement, "private": True})
            conn.sendall(json.dumps({"env": env}).encode() + b"\n")
        except BaseException:
            conn.close()
            raise
        return connection_file, pid, conn

    def _enforce(self, pid: int, limits: SandboxLimits, kernel_id: str) -> dict[str, str]:
        """What a fork gets before it goes on: the confinement, and its cgroup if it can."""
        enforcement = {
            "filesystem": "bwrap",
            "pid": "bwrap",
            "network": "bwrap",
            "bwrap": self.label,
            "user": f"uid {SANDBOX_UID} (user namespace)",
            "start": "zygote",
        }
        host_pid = self.host_pid(pid)
        if kernel_id and host_pid is not None:
            ceilings = {"pids": limits.max_processes, "memory": cgroup_memory_bytes(limits)}
            applied = cgroup.enter(kernel_id, ceilings, pid=host_pid)
            if "pids" in applied:
                enforcement["processes"] = "cgroup"
            if "memory" in applied:
                enforcement["memory"] = "cgroup"
        return enforcement

    def host_pid(self, pid: int) -> int | None:
        """The host's pid of the fork the zygote knows as ``pid`` (``NSpid``: host, zygote)."""
        if self.root_pid is None:
            return None
        todo = [self.root_pid]
        while todo:
            current = todo.pop()
            with contextlib.suppress(OSError, StopIteration, ValueError):
                status = Path(f"/proc/{current}/status").read_text()
                ids = next(ln.split()[1:] for ln in status.splitlines() if ln[:6] == "NSpid:")
                if len(ids) == 2 and int(ids[1]) == pid:
                    return current
                for task in Path(f"/proc/{current}/task").iterdir():
                    todo += [int(c) for c in (task / "children").read_text().split()]
        return None

    def alive(self, pid: int) -> bool:
        """Whether the sandbox forked as ``pid`` still runs."""
        try:
            return bool(self._ask({"alive": pid}).get("alive"))
        except (OSError, ZygoteUnavailable):
            return False

    def kill(self, pid: int) -> None:
        """End one forked sandbox (its whole pid namespace) and remove its kernel folder."""
        with contextlib.suppress(OSError, ZygoteUnavailable):
            self._ask({"kill": pid})

    def close(self) -> None:
        """End the zygote and every sandbox it forked (they die with their pid namespace)."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, 9)
            self.process.wait()
            self.process = None
        if self.kernels != Path():
            shutil.rmtree(self.kernels, ignore_errors=True)
            self.kernels = Path()
