"""Kernel launcher: apply the limits, isolate, then become an ipykernel.

The kernel spec runs ``python -m codeagent_jupyter.sandbox.launcher -f {connection_file}``.
It works in two stages so that it does not depend on who started it (our provisioner,
a plain kernel manager or a gateway):

1. outer stage: read ``SandboxLimits`` from the environment, join a ``pids`` cgroup,
   probe bubblewrap / ``unshare`` and re-execute itself inside the best one available
   with a scrubbed environment;
2. inner stage: set rlimits, private temp and config directories, change to the
   workspace, record what is enforced in ``CODEAGENT_SANDBOX_ENFORCEMENT`` and start
   ipykernel in this same process.

Only what was really applied is recorded; anything else is reported as ``"none"``.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from . import cgroup, gateway_ceiling
from .cpu import THREAD_VARIABLES, CPUBudget, pool_threads
from .gateway_ceiling import KERNEL_LIMITS_ENV, KERNEL_WORKDIR_ENV, MAX_LIMITS_ENV
from .interpreter import prefer_kernel_python
from .isolation import (
    ENFORCEMENT_ENV,
    INNER_ENV,
    LIMITS_ENV,
    NO_ISOLATION,
    REFUSED_FILE,
    SANDBOX_UID,
    WORKDIR_ENV,
    bwrap_argv,
    bwrap_works,
    scrub_env,
    unshare_argv,
)
from .paths import STATE_DIR, python_paths, workspace_problem
from .report import CONFINEMENT, is_unconfined

_MIB = 1024 * 1024
LIFETIME_CPU_FACTOR = 100
"""The kernel's whole life may use this many per-cell CPU budgets (then SIGKILL)."""
PRIVATE_DIR_PREFIX = "codeagent-sbx-"


def _limits() -> SandboxLimits:
    raw = os.environ.get(LIMITS_ENV)
    return SandboxLimits.from_dict(json.loads(raw)) if raw else SandboxLimits()


def cgroup_memory_bytes(limits: SandboxLimits) -> int:
    """Ceiling for the kernel and all it starts, above the per-process RLIMIT_DATA.

    The headroom covers code, libraries and page cache that RLIMIT_DATA does not
    count, so one big allocation still gets a MemoryError rather than an OOM kill.
    """
    return (limits.memory_mb + max(256, limits.memory_mb // 4)) * _MIB


def _host_mpl_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codeagent-jupyter" / "matplotlib"


def _warm_mpl_cache(cache: Path, env: dict[str, str]) -> None:
    """Build matplotlib's font list once, outside any sandbox, for later sandboxes to copy.

    A fresh, read-only sandbox would otherwise rebuild it (seconds) on every first plot.
    """
    if any(cache.glob("fontlist-*.json")) or importlib.util.find_spec("matplotlib") is None:
        return
    lock = cache / ".building"
    with contextlib.suppress(OSError):
        cache.mkdir(parents=True, exist_ok=True)
        if lock.exists() and time.time() - lock.stat().st_mtime > 120:
            lock.unlink()
        os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        code = f"import os, matplotlib.font_manager\nos.remove({str(lock)!r})"
        subprocess.Popen(
            [sys.executable, "-c", code],
            env={**env, "MPLCONFIGDIR": str(cache)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )


def _refuse(connection_file: Path, reason: str) -> None:
    """Stop before any isolation is entered, leaving the reason where ``Sandbox`` looks."""
    if connection_file.parent.name.startswith(PRIVATE_DIR_PREFIX):
        with contextlib.suppress(OSError):
            (connection_file.parent / REFUSED_FILE).write_text(reason + "\n")
    print(f"codeagent sandbox: {reason}", file=sys.stderr, flush=True)
    raise SystemExit(3)


def _confinement_reason(enforcement: dict[str, str]) -> str:
    missing = " and no ".join(k for k in CONFINEMENT if enforcement.get(k, "none") == "none")
    return (
        f"sandbox refused to start: no {missing} {NO_ISOLATION} (bubblewrap is missing or "
        "cannot create namespaces here)"
    )


def _cap_processes(limits: SandboxLimits, enforcement: dict[str, str]) -> None:
    """RLIMIT_NPROC for the real uid, set before any user namespace makes us look like root.

    The limit counts every process of the user, so room is left for what already runs;
    it is ignored for root, which gets the pids cgroup instead.
    """
    if "processes" in enforcement or os.geteuid() == 0:
        return
    ceiling = _user_process_count() + limits.max_processes
    _, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if hard != resource.RLIM_INFINITY:
        ceiling = min(ceiling, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NPROC, (ceiling, ceiling))
        enforcement["processes"] = "rlimit (per user)"


def _user(kind: str) -> str:
    """Who the kernel is, as far as the host's files are concerned ("none" = root)."""
    if kind == "bwrap":
        return f"uid {SANDBOX_UID} (user namespace)"
    if os.geteuid() == 0:
        return "none"
    return f"uid {os.geteuid()}" + (" (user namespace)" if kind == "unshare" else "")


def outer(connection_file: Path, kernel_args: list[str] | None = None) -> None:
    """Choose and enter the isolation; never returns when it re-executes itself.

    ``kernel_args`` (e.g. ``--matplotlib=inline`` from nbclient) are for ipykernel.
    """
    kernel_args = kernel_args or []
    try:
        limits, workdir, unconfined_ok = gateway_ceiling.resolve(os.environ, os.getcwd())
    except ValueError as e:
        _refuse(connection_file, str(e))
    info = json.loads(connection_file.read_text())
    problem = workspace_problem(workdir)
    if problem:
        _refuse(connection_file, problem)
    env = scrub_env(os.environ)
    for requested in (KERNEL_LIMITS_ENV, KERNEL_WORKDIR_ENV, MAX_LIMITS_ENV):
        env.pop(requested, None)
    env.update(gateway_ceiling.applied_env(limits, workdir))
    env["MALLOC_ARENA_MAX"] = "2"
    # debugpy's "frozen modules" warning would be the kernel's first output, on stderr: noise
    # in every session, and ahead of iopub_welcome for a client that subscribes late.
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    mpl_cache = _host_mpl_cache()
    _warm_mpl_cache(mpl_cache, env)

    kernel_id = connection_file.stem.removeprefix("kernel-")
    enforcement: dict[str, str] = {}
    ceilings = {"pids": limits.max_processes, "memory": cgroup_memory_bytes(limits)}
    applied = cgroup.enter(kernel_id, ceilings)
    if "pids" in applied:
        enforcement["processes"] = "cgroup"
    if "memory" in applied:
        enforcement["memory"] = "cgroup"
    ipc = info.get("transport") == "ipc"
    netns_possible = ipc and not limits.network
    network_none = "allowed" if limits.network else "none"

    kind, prefix = "none", list[str]()
    if bwrap_works(network=not netns_possible):
        with contextlib.suppress(OSError):
            (workdir / STATE_DIR).mkdir(exist_ok=True)  # a mount point for its mask
        writable = [Path(info["ip"]).parent] if ipc else []
        kind = "bwrap"
        prefix = bwrap_argv(
            workdir=workdir,
            writable=writable,
            readable=[connection_file, *python_paths()],
            network=not netns_possible,
            tmp_bytes=max(limits.file_size_mb, 64) * _MIB,
        )
        enforcement.update(filesystem="bwrap", pid="bwrap")
        enforcement["network"] = "bwrap" if netns_possible else network_none
    elif (fallback := unshare_argv(network=not netns_possible)) is not None:
        kind, prefix = "unshare", fallback
        enforcement["pid"] = "unshare"
        enforcement["network"] = "unshare" if netns_possible else network_none
    else:
        enforcement["network"] = network_none
    enforcement["user"] = _user(kind)
    for key in CONFINEMENT:
        enforcement.setdefault(key, "none")
    if is_unconfined(enforcement) and not unconfined_ok:
        _refuse(connection_file, _confinement_reason(enforcement))
    _cap_processes(limits, enforcement)

    state = {"enforcement": enforcement, "mpl_cache": str(mpl_cache), "private": kind == "bwrap"}
    env[INNER_ENV] = json.dumps(state)
    if not prefix:
        os.environ.clear()
        os.environ.update(env)
        inner(connection_file, kernel_args)
        return
    cmd = [sys.executable, "-m", "codeagent_jupyter.sandbox.launcher", "-f", str(connection_file)]
    cmd += kernel_args
    argv = prefix + cmd
    os.execvpe(argv[0], argv, env)


def _user_process_count() -> int:
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

    if cap(resource.RLIMIT_DATA, limits.memory_mb * _MIB):
        in_cgroup = enforcement.get("memory") == "cgroup"
        enforcement["memory"] = "rlimit+cgroup" if in_cgroup else "rlimit"
    # CPUBudget raises the soft limit before each cell, so the budget is per cell; the hard
    # limit is a lifetime backstop that code in the kernel cannot lift.
    lifetime = limits.cpu_seconds * LIFETIME_CPU_FACTOR
    if cap(resource.RLIMIT_CPU, limits.cpu_seconds, lifetime):
        enforcement["cpu"] = "rlimit"
    if cap(resource.RLIMIT_FSIZE, limits.file_size_mb * _MIB):
        enforcement["file_size"] = "rlimit"
    if cap(resource.RLIMIT_CORE, 0):
        enforcement["core_dumps"] = "off"
    # RLIMIT_NPROC is per user (and ignored for root): leave room for what already runs.
    if (
        "processes" not in enforcement
        and os.geteuid() != 0
        and cap(resource.RLIMIT_NPROC, _user_process_count() + limits.max_processes)
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


def inner(connection_file: Path, kernel_args: list[str] | None = None) -> None:
    """Apply per-process limits and run ipykernel in this process."""
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
    for font_list in Path(state.get("mpl_cache", "/nonexistent")).glob("fontlist-*.json"):
        with contextlib.suppress(OSError):
            shutil.copy(font_list, scratch / "matplotlib" / font_list.name)
    _apply_rlimits(limits, enforcement)
    for key in ("memory", "cpu", "file_size", "processes", "filesystem", "pid"):
        enforcement.setdefault(key, "none")
    enforcement["env"] = "allow-list"
    enforcement["limits"] = limits.to_dict()  # the values applied, not only the mechanisms
    os.environ[ENFORCEMENT_ENV] = json.dumps(enforcement, sort_keys=True)

    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]
    os.chdir(workdir)
    from ipykernel.kernelapp import IPKernelApp

    argv = ["-f", str(connection_file), *kernel_args, "--HistoryManager.hist_file=:memory:"]
    if not os.environ.get("JPY_PARENT_PID"):
        # Without a parent pid ipykernel prints its "Ctrl-C will not work ... --existing"
        # note for a terminal user. 1 means "started by a manager", and on POSIX starts
        # no parent poller: the sandbox's own supervision ends the kernel with its parent.
        argv.append("--IPKernelApp.parent_handle=1")
    app = IPKernelApp.instance()
    app.initialize(argv)
    if enforcement["cpu"] == "rlimit":
        CPUBudget(limits.cpu_seconds).install(app.shell)
    app.start()


def main(argv: list[str] | None = None) -> None:
    """Parse ``-f CONNECTION_FILE``; every other argument is passed on to ipykernel.

    Kernel managers append ``extra_arguments`` to the spec's argv (nbclient and nbval
    pass ``--matplotlib=inline``); a kernel must accept what ipykernel accepts.
    """
    parser = argparse.ArgumentParser(
        description="Start a limited, isolated ipykernel.", allow_abbrev=False
    )
    parser.add_argument("-f", dest="connection_file", required=True, type=Path)
    args, kernel_args = parser.parse_known_args(argv)
    connection_file = args.connection_file.resolve()
    if INNER_ENV in os.environ:
        inner(connection_file, kernel_args)
    else:
        outer(connection_file, kernel_args)


if __name__ == "__main__":
    main()
