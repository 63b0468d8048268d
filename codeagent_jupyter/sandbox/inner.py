"""The launcher's inner stage: per-process limits, private scratch, then ipykernel.

It runs inside the isolation the outer stage chose (``launcher.outer``), or in the same
process where none could be entered and unconfined mode was chosen. Everything applied here
is recorded in ``CODEAGENT_SANDBOX_ENFORCEMENT``; what could not be is ``"none"``.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from . import overlay, tracebacks
from .cpu import THREAD_VARIABLES, CPUBudget, pool_threads
from .interpreter import prefer_kernel_python
from .isolation import ENFORCEMENT_ENV, INNER_ENV, LIMITS_ENV, WORKDIR_ENV
from .mpl_cache import copy_font_list
from .paths import PRIVATE_DIR_PREFIX

MIB = 1024 * 1024
LIFETIME_CPU_FACTOR = 100
"""The kernel's whole life may use this many per-cell CPU budgets (then SIGKILL)."""


def _limits() -> SandboxLimits:
    raw = os.environ.get(LIMITS_ENV)
    return SandboxLimits.from_dict(json.loads(raw)) if raw else SandboxLimits()


def user_process_count() -> int:
    """Processes and threads of our real uid: RLIMIT_NPROC counts them all."""
    uid, count = os.getuid(), 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(entry / "task"))
    return count


def _apply_rlimits(limits: SandboxLimits, enforcement: dict[str, str]) -> None:
    def cap(which: int, soft: int, hard: int | None = None) -> bool:
        _, current_hard = resource.getrlimit(which)
        hard = soft if hard is None else hard
        if current_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, current_hard), min(hard, current_hard)
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            return False
        return True

    if cap(resource.RLIMIT_DATA, limits.memory_mb * MIB):
        in_cgroup = enforcement.get("memory") == "cgroup"
        enforcement["memory"] = "rlimit+cgroup" if in_cgroup else "rlimit"
    # CPUBudget raises the soft limit before each cell, so the budget is per cell; the hard
    # limit is a lifetime backstop that code in the kernel cannot lift.
    lifetime = limits.cpu_seconds * LIFETIME_CPU_FACTOR
    if cap(resource.RLIMIT_CPU, limits.cpu_seconds, lifetime):
        enforcement["cpu"] = "rlimit"
    if cap(resource.RLIMIT_FSIZE, limits.file_size_mb * MIB):
        enforcement["file_size"] = "rlimit"
    if cap(resource.RLIMIT_CORE, 0):
        enforcement["core_dumps"] = "off"
    # RLIMIT_NPROC is per user (and ignored for root): leave room for what already runs.
    if (
        "processes" not in enforcement
        and os.geteuid() != 0
        and cap(resource.RLIMIT_NPROC, user_process_count() + limits.max_processes)
    ):
        enforcement["processes"] = "rlimit (per user)"
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).mallopt(-8, 2)  # M_ARENA_MAX: fewer, smaller malloc arenas


def _private_dirs(connection_file: Path, inside_sandbox: bool) -> Path:
    """Writable scratch for caches, config and $HOME, private to this one kernel.

    Inside bubblewrap /tmp is already this kernel's own tmpfs; otherwise the provisioner's
    private directory (or a fresh one) is used, never a path two kernels could share.
    """
    if inside_sandbox:
        root = Path(tempfile.gettempdir()) / "codeagent"
    elif connection_file.parent.name.startswith(PRIVATE_DIR_PREFIX):
        root = connection_file.parent / "tmp"
    else:
        root = Path(tempfile.mkdtemp(prefix=PRIVATE_DIR_PREFIX))
    for name in ("matplotlib", "ipython", "cache", "home"):
        (root / name).mkdir(parents=True, exist_ok=True, mode=0o700)
    return root


def _start_forwarder(socket_path: str, enforcement: dict[str, Any]) -> None:
    """``--network policy``: the proxy on this sandbox's loopback, before any cell runs,
    and the proxy variables naming it; a failure is reported, never a way around."""
    from ..egress import forwarder

    try:
        forwarder.spawn(forwarder.listen(), socket_path)
    except OSError as e:
        enforcement["egress"] = f"none (the forwarder could not start: {e.strerror or e})"
        return
    forwarder.proxy_env(os.environ)


def inner(
    connection_file: Path,
    kernel_args: list[str] | None = None,
    starting: contextlib.AbstractContextManager[None] | None = None,
) -> None:
    """Apply per-process limits and run ipykernel in this process; ``starting`` is held
    while the kernel initializes (a zygote's fork: ``zygote_pages.ModuleFiles``)."""
    kernel_args = kernel_args or []
    state: dict[str, Any] = json.loads(os.environ.pop(INNER_ENV, "{}") or "{}")
    enforcement: dict[str, Any] = dict(state.get("enforcement", {}))
    limits = _limits()
    workdir = Path(os.environ.get(WORKDIR_ENV) or os.getcwd())
    scratch = _private_dirs(connection_file, bool(state.get("private")))
    os.environ.update(
        MPLCONFIGDIR=str(scratch / "matplotlib"),
        IPYTHONDIR=str(scratch / "ipython"),
        XDG_CACHE_HOME=str(scratch / "cache"),
        HOME=str(scratch / "home"),
        MPLBACKEND="module://matplotlib_inline.backend_inline",
    )
    prefer_kernel_python(os.environ, scratch)
    threads = str(pool_threads(limits.max_processes, limits.memory_mb))
    for name in THREAD_VARIABLES:  # an operator's own setting passes the allow-list and wins
        os.environ.setdefault(name, threads)
    copy_font_list(state.get("mpl_cache"), scratch / "matplotlib")
    _apply_rlimits(limits, enforcement)
    if state.get("egress"):
        _start_forwarder(str(state["egress"]), enforcement)
    for key in (*SandboxLimits.enforced_keys(), "filesystem", "pid"):
        enforcement.setdefault(key, "none")
    enforcement["env"] = "allow-list"
    enforcement["limits"] = limits.to_dict()  # the values applied, not only the mechanisms
    os.environ[ENFORCEMENT_ENV] = json.dumps(enforcement, sort_keys=True)

    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]
    overlay.on_path()
    os.chdir(workdir)
    from ipykernel.kernelapp import IPKernelApp

    argv = ["-f", str(connection_file), *kernel_args, "--HistoryManager.hist_file=:memory:"]
    if not os.environ.get("JPY_PARENT_PID"):
        # Without a parent pid ipykernel prints its "Ctrl-C will not work ... --existing"
        # note for a terminal user. 1 means "started by a manager", and on POSIX starts
        # no parent poller: the sandbox's own supervision ends the kernel with its parent.
        argv.append("--IPKernelApp.parent_handle=1")
    tracebacks.install()  # a cell's traceback shows the lines that ran (IPython >= 9.12)
    app = IPKernelApp.instance()
    with starting or contextlib.nullcontext():
        app.initialize(argv)
    if "matplotlib.pyplot" in sys.modules:  # a zygote's fork: imported before any shell was
        app.shell.enable_matplotlib("inline")  # so a figure is shown as PNG, not as text
    overlay.quiet_pip(app.shell)
    if enforcement["cpu"] == "rlimit":
        CPUBudget(limits.cpu_seconds).install(app.shell)
    app.start()
