"""What the sandbox may see: the environment allow-list and the bubblewrap command line.

Shared by the provisioner (server side, before the kernel process exists) and the
launcher (inside the kernel's own process tree), so a secret is dropped twice and the
rules live in one place.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from .paths import STATE_DIR, hidden_paths

LIMITS_ENV = "CODEAGENT_SANDBOX_LIMITS"
"""JSON of ``SandboxLimits`` handed from the server to the launcher."""
WORKDIR_ENV = "CODEAGENT_SANDBOX_WORKDIR"
"""Workspace directory: the only persistent place the kernel may write."""
ENFORCEMENT_ENV = "CODEAGENT_SANDBOX_ENFORCEMENT"
"""JSON the launcher leaves in the kernel's environment: what it really applied."""
ALLOW_UNCONFINED_ENV = "CODEAGENT_SANDBOX_ALLOW_UNCONFINED"
"""Set to ``1`` when the caller explicitly accepts a sandbox without pid/filesystem isolation."""
EGRESS_ENV = "CODEAGENT_SANDBOX_EGRESS"
"""Path of the egress broker's socket on the host, for ``--network policy``: the launcher
binds it into the sandbox (``egress.forwarder.SOCKET``)."""
INNER_ENV = "CODEAGENT_SANDBOX_INNER"
"""Set by the outer launcher stage; tells the inner stage which isolation wraps it."""
REFUSED_FILE = "refused.txt"
"""Written beside the connection file when the launcher refuses to start; read by ``Sandbox``."""
NO_ISOLATION = "isolation on this machine"
"""Part of the launcher's refusal when it cannot isolate: ``Sandbox`` then raises
``IsolationUnavailable``, whose message each edge completes with its own option."""
SANDBOX_UID = 65534
"""The unprivileged uid/gid (``nobody``) the kernel has inside its user namespace."""

_ALLOWED_NAMES = frozenset(
    {
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LANGUAGE",
        "TERM",
        "TZ",
        "PYTHONPATH",
        "PYTHONHASHSEED",
        "PYTHONIOENCODING",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONUTF8",
        "PYTHONWARNINGS",
        "VIRTUAL_ENV",
        "CONDA_PREFIX",
        "CONDA_DEFAULT_ENV",
        "LD_LIBRARY_PATH",
        "MPLBACKEND",
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        LIMITS_ENV,
        WORKDIR_ENV,
        ALLOW_UNCONFINED_ENV,
        EGRESS_ENV,
        "CODEAGENT_SANDBOX_BWRAP",  # which bubblewrap (bubblewrap.py)
        # A gateway's request and the operator's ceiling (see gateway_ceiling.py).
        "KERNEL_CODEAGENT_LIMITS",
        "KERNEL_CODEAGENT_WORKDIR",
        "CODEAGENT_SANDBOX_MAX_LIMITS",
    }
)
_ALLOWED_PREFIXES = ("LC_",)
_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|^OPENAI_|^JUPYTER_TOKEN|^JPY_")


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """Keep only allow-listed variables, then drop anything that still looks secret.

    jupyter_client's LocalProvisioner copies the whole server environment into the
    kernel; an allow-list is the only rule that stays safe when new secrets appear.
    ``JPY_PARENT_PID`` is not kept: it names the server, which the sandbox has no
    business signalling; the namespaces make the kernel die with its launcher instead.
    """
    kept: dict[str, str] = {}
    for name, value in env.items():
        upper = name.upper()
        allowed = name in _ALLOWED_NAMES or upper.startswith(_ALLOWED_PREFIXES)
        if not allowed:
            continue
        exempt = name.startswith("CODEAGENT_SANDBOX_")
        if not exempt and _SECRET.search(upper):
            continue
        kept[name] = value
    return kept


NOOP = next(
    ([path] for path in ("/bin/true", "/usr/bin/true") if os.path.exists(path)),
    [sys.executable, "-c", ""],
)
"""A no-op command that needs nothing from PATH."""


def _runs(argv: list[str]) -> bool:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def bwrap_namespaces(exe: str, network: bool) -> list[str]:
    """bubblewrap's namespaces for the kernel: a user namespace as ``nobody``, no capabilities."""
    argv = [exe, "--die-with-parent", "--new-session", "--unshare-user"]
    argv += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    argv += ["--cap-drop", "ALL"]
    if not network:
        argv.append("--unshare-net")
    return argv


def unshare_argv(network: bool) -> list[str] | None:
    """The fallback without bubblewrap: user, pid and (unless allowed) network namespaces.

    ``--fork`` makes the kernel pid 1 of its namespace, so whatever it starts dies with
    it; ``--kill-child`` kills it when ``unshare`` is killed. It gives no filesystem
    isolation, so the launcher only uses it when unconfined mode was chosen. The first
    candidate that runs here wins (``--map-user`` needs a recent util-linux).
    """
    exe = shutil.which("unshare")
    if not exe:
        return None
    base = [exe, "--user", "--pid", "--mount-proc", "--fork", "--kill-child"]
    if not network:
        base.append("--net")
    uid = str(SANDBOX_UID)
    for ids in ([f"--map-user={uid}", f"--map-group={uid}"], ["--map-root-user"]):
        if _runs([*base, *ids, *NOOP]):
            return [*base, *ids]
    return None


_ETC = (
    "passwd",
    "group",
    "hosts",
    "host.conf",
    "nsswitch.conf",
    "resolv.conf",
    "gai.conf",
    "services",
    "protocols",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "timezone",
    "locale.alias",
    "mime.types",
    "os-release",
    "alternatives",
    "ssl",
    "pki",
    "ca-certificates",
    "ca-certificates.conf",
    "crypto-policies",
    "fonts",
    "matplotlibrc",
)
"""What programs need from /etc; never shadow, sudoers, ssh keys or machine secrets."""


def _system_binds() -> list[str]:
    """/usr read-only, and /bin, /sbin, /lib* as the distribution has them (links or dirs)."""
    argv = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            argv += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            argv += ["--ro-bind", str(path), str(path)]
    argv += ["--dir", "/etc"]
    for name in _ETC:
        argv += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return argv


def bwrap_argv(
    *,
    exe: str,
    workdir: Path,
    writable: Iterable[Path],
    readable: Iterable[Path],
    network: bool,
    tmp_bytes: int,
    read_only_over: Iterable[Path] = (),
    sockets: Iterable[tuple[Path, str]] = (),
) -> list[str]:
    """The bubblewrap prefix: only what Python needs, read-only; masks applied last.

    ``exe`` is the bubblewrap that ``bubblewrap.choose`` found working. The kernel runs as
    ``nobody`` in a user namespace with no capabilities. Nothing of
    the host is visible unless bound here: /usr, a minimal /etc, the interpreter and its
    packages (``readable``), the workspace and the connection directory (``writable``),
    and read-only folders inside a writable one (``read_only_over``: the package overlay);
    ``sockets`` binds single host sockets at paths of their own inside (the egress broker's).
    So sockets in /run, other homes and unknown secret files are simply absent. Later
    mounts win, so the masks (server state in the workspace, known secrets under any
    bound directory) come after every bind and cannot be undone by them.
    """
    argv = bwrap_namespaces(exe, network)
    argv += _system_binds()
    argv += ["--dev", "/dev", "--proc", "/proc"]
    argv += ["--size", str(tmp_bytes), "--tmpfs", "/tmp"]
    bound: list[Path] = []
    for path in readable:
        argv += ["--ro-bind", str(path), str(path)]
        bound.append(path)
    for path in [*writable, workdir]:
        argv += ["--bind", str(path), str(path)]
        bound.append(path)
    for path in read_only_over:
        argv += ["--ro-bind", str(path), str(path)]
    for path, inside in sockets:
        argv += ["--bind", str(path), inside]
    state = workdir / STATE_DIR
    if state.is_dir() and not state.is_symlink():
        argv += ["--tmpfs", str(state)]
    for path in hidden_paths():
        if any(path.is_relative_to(b) and path != b for b in bound):
            mask = ["--tmpfs"] if path.is_dir() else ["--ro-bind", "/dev/null"]
            argv += [*mask, str(path)]
    argv += ["--remount-ro", "/", "--chdir", str(workdir)]
    return argv
