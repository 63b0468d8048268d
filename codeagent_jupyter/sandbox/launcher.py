"""Kernel launcher: apply the limits, isolate, then become an ipykernel.

The kernel spec runs ``python -m codeagent_jupyter.sandbox.launcher -f {connection_file}``.
It works in two stages so that it does not depend on who started it (our provisioner,
a plain kernel manager or a gateway):

1. outer stage: read ``SandboxLimits`` from the environment, join a ``pids`` cgroup,
   probe bubblewrap / ``unshare`` and re-execute itself inside the best one available
   with a scrubbed environment;
2. inner stage (``inner.py``): set rlimits, private temp and config directories, change
   to the workspace, record what is enforced in ``CODEAGENT_SANDBOX_ENFORCEMENT`` and
   start ipykernel in this same process.

Only what was really applied is recorded; anything else is reported as ``"none"``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import stat
import sys
from pathlib import Path

from ..config import SandboxLimits
from . import bubblewrap, cgroup, gateway_ceiling, overlay
from .gateway_ceiling import KERNEL_LIMITS_ENV, KERNEL_WORKDIR_ENV, MAX_LIMITS_ENV
from .inner import LIFETIME_CPU_FACTOR, MIB, inner, user_process_count
from .isolation import (
    EGRESS_ENV,
    INNER_ENV,
    NO_ISOLATION,
    REFUSED_FILE,
    SANDBOX_UID,
    bwrap_argv,
    scrub_env,
    unshare_argv,
)
from .mpl_cache import host_mpl_cache, warm_mpl_cache
from .paths import PRIVATE_DIR_PREFIX, STATE_DIR, python_paths, workspace_problem
from .report import CONFINEMENT, is_unconfined

EGRESS_SOCKET = "/run/codeagent/egress.sock"
"""Where the broker's socket is inside the sandbox (``egress.forwarder.SOCKET`` says the
same; not imported here, so a launch without ``--network policy`` loads no asyncio)."""

__all__ = [
    "LIFETIME_CPU_FACTOR",
    "PRIVATE_DIR_PREFIX",
    "cgroup_memory_bytes",
    "inner",
    "main",
    "outer",
]


def cgroup_memory_bytes(limits: SandboxLimits) -> int:
    """Ceiling for the kernel and all it starts, above the per-process RLIMIT_DATA.

    The headroom covers code, libraries and page cache that RLIMIT_DATA does not
    count, so one big allocation still gets a MemoryError rather than an OOM kill.
    """
    return (limits.memory_mb + max(256, limits.memory_mb // 4)) * MIB


def _refuse(connection_file: Path, reason: str) -> None:
    """Stop before any isolation is entered, leaving the reason where ``Sandbox`` looks."""
    if connection_file.parent.name.startswith(PRIVATE_DIR_PREFIX):
        with contextlib.suppress(OSError):
            (connection_file.parent / REFUSED_FILE).write_text(reason + "\n")
    print(f"codeagent sandbox: {reason}", file=sys.stderr, flush=True)
    raise SystemExit(3)


def _confinement_reason(enforcement: dict[str, str], choice: bubblewrap.Choice) -> str:
    missing = " and no ".join(k for k in CONFINEMENT if enforcement.get(k, "none") == "none")
    return f"sandbox refused to start: no {missing} {NO_ISOLATION}: {bubblewrap.advice(choice)}"


def _cap_processes(limits: SandboxLimits, enforcement: dict[str, str]) -> None:
    """RLIMIT_NPROC for the real uid, set before any user namespace makes us look like root.

    The limit counts every process of the user, so room is left for what already runs;
    it is ignored for root, which gets the pids cgroup instead.
    """
    if "processes" in enforcement or os.geteuid() == 0:
        return
    ceiling = user_process_count() + limits.max_processes
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


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def outer(connection_file: Path, kernel_args: list[str] | None = None) -> None:
    """Choose and enter the isolation; never returns when it re-executes itself.

    ``kernel_args`` (e.g. ``--matplotlib=inline`` from nbclient) are for ipykernel.
    """
    kernel_args = kernel_args or []
    try:
        limits, workdir, unconfined_ok = gateway_ceiling.resolve(os.environ, os.getcwd())
        bubblewrap.setting(os.environ)
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
    mpl_cache = host_mpl_cache()
    warm_mpl_cache(mpl_cache, env)
    packages: list[Path] = []
    if connection_file.parent.name.startswith(PRIVATE_DIR_PREFIX):
        packages.append(connection_file.parent / overlay.PACKAGES_DIR)
        overlay.prepare(packages[0], env)

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
    egress = env.pop(EGRESS_ENV, "") if limits.egress_broker and netns_possible else ""
    env.pop(EGRESS_ENV, None)
    if egress and not _is_socket(egress):
        egress = ""  # only a socket is bound read-write into the sandbox, never a file

    kind, prefix = "none", list[str]()
    choice = bubblewrap.choose(network=not netns_possible)
    if choice.bwrap is not None:
        with contextlib.suppress(OSError):
            (workdir / STATE_DIR).mkdir(exist_ok=True)  # a mount point for its mask
        writable = [Path(info["ip"]).parent] if ipc else []
        kind = "bwrap"
        prefix = bwrap_argv(
            exe=choice.bwrap.path,
            workdir=workdir,
            writable=writable,
            readable=[connection_file, *python_paths()],
            network=not netns_possible,
            tmp_bytes=max(limits.file_size_mb, 64) * MIB,
            read_only_over=packages,
            sockets=[(Path(egress), EGRESS_SOCKET)] if egress else [],
        )
        enforcement.update(filesystem="bwrap", pid="bwrap", bwrap=choice.bwrap.label)
        if egress:
            enforcement["egress"] = "broker"
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
        _refuse(connection_file, _confinement_reason(enforcement, choice))
    _cap_processes(limits, enforcement)

    if limits.egress_broker and "egress" not in enforcement:
        enforcement["egress"] = "none (needs bubblewrap and a broker: no way out)"
    state = {"enforcement": enforcement, "mpl_cache": str(mpl_cache), "private": kind == "bwrap"}
    if enforcement.get("egress") == "broker":
        state["egress"] = EGRESS_SOCKET
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
