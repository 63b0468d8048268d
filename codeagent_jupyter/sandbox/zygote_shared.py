"""A zygote shared by one user's processes, so a short ``codeagent run`` or ``mcp`` forks at once.

A zygote started by each process costs that process the data stack's imports (seconds)
before its first fork; one that outlives it costs them once. There is one per workspace,
Python environment and version of this package's code, in a folder of the Jupyter runtime
directory (``codeagent-z/KEY``) that must be this user's alone (0700, not a link: checked,
else refused in one line). The first process that needs it starts it; the next ones find it
there and attach; a lock file makes two that start at once start one. It belongs to no
process: no ``--die-with-parent``. Each fork is tied to the process that asked for it by
its lease (``Zygote.spawn``), so a client that dies, even killed outright, takes its kernel
with it; the zygote ends itself after ``IDLE_EXIT_S`` with no request and no fork alive.
See docs/security.md, "The zygote".
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import stat
import sys
from pathlib import Path

from .paths import PRIVATE_DIR_PREFIX
from .stop import descendants, started_at
from .zygote_host import SOCKET_NAME, Zygote, ZygoteUnavailable

IDLE_EXIT_S = 900.0
"""Seconds a shared zygote waits with no request and no fork alive before it ends."""
FOLDER_NAME = "codeagent-z"
STATE_FILE = "zygote.json"
MAX_FOLDER_CHARS = 80
"""A unix socket's path has 107 bytes at most; a kernel folder and its ipc sockets below
the zygote's folder take about 27 of them."""


ROOT_ENV = "CODEAGENT_ZYGOTE_ROOT"
"""A folder whose workspaces one shared zygote serves (bound read-write into the zygote,
as a server's root is into the server's; each fork still sees only its own workspace)."""


def served_root(workspace: Path) -> Path:
    """The folder the shared zygote for ``workspace`` serves: ``$CODEAGENT_ZYGOTE_ROOT``
    when it holds ``workspace``, else the workspace alone."""
    workspace = workspace.resolve()
    chosen = os.environ.get(ROOT_ENV, "")
    if chosen and workspace.is_relative_to(Path(chosen).resolve()):
        return Path(chosen).resolve()
    return workspace


def runtime_root() -> Path:
    """Where shared zygotes live: the Jupyter runtime directory (``JUPYTER_RUNTIME_DIR``)."""
    from jupyter_core.paths import jupyter_runtime_dir

    return Path(jupyter_runtime_dir()) / FOLDER_NAME


def _code_stamp() -> str:
    """This package's code, as a zygote running it would differ: each module's size and
    modification time (an upgrade or an edit of a checkout makes a new zygote)."""
    package = Path(__file__).resolve().parents[1]
    parts = []
    for path in sorted(package.rglob("*.py")):
        with contextlib.suppress(OSError):
            info = path.stat()
            parts.append(f"{path.relative_to(package)}:{info.st_size}:{info.st_mtime_ns}")
    return "\n".join(parts)


def key(workspace: Path) -> str:
    """The zygote's name for ``workspace`` in this Python environment and code."""
    what = [str(workspace.resolve()), sys.executable, sys.prefix, _code_stamp()]
    return hashlib.sha256(json.dumps(what).encode()).hexdigest()[:12]


def private_folder(path: Path) -> Path:
    """``path``, made 0700 if missing; refused unless it is a folder of this user's alone
    (a folder another user made first, or a link, would let them answer as the zygote)."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700, parents=True)
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise ZygoteUnavailable(
            f"{path} is not a folder of this user's alone (0700): no shared zygote there"
        )
    return path


class SharedZygote(Zygote):
    """The shared zygote for one workspace: attached if it runs, else started."""

    def __init__(
        self, workspaces: Path, root: Path | None = None, idle_exit: float = IDLE_EXIT_S
    ) -> None:
        super().__init__(workspaces)
        self.root = root if root is not None else runtime_root()
        self.idle_exit = idle_exit
        self._root_pid: int | None = None

    @property
    def folder(self) -> Path:
        """This zygote's folder: its socket, its state, its kernels' folders."""
        return self.root / key(self.workspaces)

    def ensure_started(self) -> None:
        """Attach to the running zygote, or start one; once per process, then a check."""
        with self._starting:
            if self._root_pid is not None and self._answers():
                return
            self.start()

    def start(self, timeout: float = 120.0) -> None:
        """Attach, or start one (under the folder's lock: one starter at a time)."""
        folder = self.folder
        private_folder(self.root)
        if len(str(folder)) > MAX_FOLDER_CHARS:
            raise ZygoteUnavailable(
                f"{folder} is too long a path for the zygote's sockets: set "
                "JUPYTER_RUNTIME_DIR to a shorter folder, or use --start cold"
            )
        private_folder(folder)
        self.kernels, self.socket = folder, folder / SOCKET_NAME
        with open(folder / "lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self._attach():
                return
            for leftover in folder.glob(f"{PRIVATE_DIR_PREFIX}*"):  # of forks of a dead one
                shutil.rmtree(leftover, ignore_errors=True)
            with contextlib.suppress(FileNotFoundError):
                self.socket.unlink()
            pid = self._launch([], ["--idle-exit", str(self.idle_exit)], detach=True)
            assert self.process is not None and self.process.stdout is not None
            self.process.stdout.close()  # it writes nothing more there
            self.process = None  # the shell, gone: the zygote is no child of ours
            state = {"pid": pid, "started": started_at(pid), "label": self.label}
            (folder / STATE_FILE).write_text(json.dumps(state))
            self._root_pid = pid

    def _stderr(self) -> int | None:
        """The zygote's complaints go to ``zygote.log`` in its folder: it outlives us."""
        return os.open(self.folder / "zygote.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    def _attach(self) -> bool:
        """Whether a zygote runs here and answers; then this object uses it."""
        try:
            state = json.loads((self.kernels / STATE_FILE).read_text())
            pid = int(state["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return False
        if started_at(pid) != state.get("started"):
            return False  # gone, and the number may be another process's now
        self._root_pid, self.label = pid, str(state.get("label", ""))
        if self._answers():
            return True
        self._root_pid = None
        return False

    def _answers(self) -> bool:
        try:
            return "zygote" in self._ask({"hello": 1})
        except (OSError, ValueError, ZygoteUnavailable):
            return False

    @property
    def root_pid(self) -> int | None:
        """The zygote's bubblewrap, as recorded by its starter (None once it is gone)."""
        return self._root_pid

    def close(self) -> None:
        """Forget the zygote: it serves other processes, and ends itself when idle."""
        self._root_pid = None

    def stop(self) -> None:
        """End the zygote and every fork it has (whoever asked for them)."""
        stop_zygote(self.folder)
        self._root_pid = None


def stop_zygote(folder: Path) -> None:
    """End the shared zygote whose folder is ``folder``, if its state file names a live one:
    the first process of its pid namespace (all of it dies with that one), then its
    bubblewrap."""
    try:
        state = json.loads((folder / STATE_FILE).read_text())
        pid = int(state["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return
    if started_at(pid) != state.get("started"):
        return  # gone, and the number may be another process's now
    for member in [*descendants(pid)[:1], pid]:
        with contextlib.suppress(OSError):
            os.kill(member, signal.SIGKILL)
