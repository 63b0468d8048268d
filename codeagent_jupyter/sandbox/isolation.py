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

LIMITS_ENV = "CODEAGENT_SANDBOX_LIMITS"
"""JSON of ``SandboxLimits`` handed from the server to the launcher."""
WORKDIR_ENV = "CODEAGENT_SANDBOX_WORKDIR"
"""Workspace directory: the only persistent place the kernel may write."""
ENFORCEMENT_ENV = "CODEAGENT_SANDBOX_ENFORCEMENT"
"""JSON the launcher leaves in the kernel's environment: what it really applied."""
ALLOW_UNCONFINED_ENV = "CODEAGENT_SANDBOX_ALLOW_UNCONFINED"
"""Set to ``1`` when the caller explicitly accepts a sandbox without pid/filesystem isolation."""
INNER_ENV = "CODEAGENT_SANDBOX_INNER"
"""Set by the outer launcher stage; tells the inner stage which isolation wraps it."""

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
        "JPY_PARENT_PID",
        LIMITS_ENV,
        WORKDIR_ENV,
        ALLOW_UNCONFINED_ENV,
    }
)
_ALLOWED_PREFIXES = ("LC_",)
_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|^OPENAI_|^JUPYTER_TOKEN|^JPY_")


def scrub_env(env: Mapping[str, str]) -> dict[str, str]:
    """Keep only allow-listed variables, then drop anything that still looks secret.

    jupyter_client's LocalProvisioner copies the whole server environment into the
    kernel; an allow-list is the only rule that stays safe when new secrets appear.
    ``JPY_PARENT_PID`` is the one ``JPY_`` name kept: ipykernel uses it to exit with
    its parent when there is no PID namespace to do that.
    """
    kept: dict[str, str] = {}
    for name, value in env.items():
        upper = name.upper()
        allowed = name in _ALLOWED_NAMES or upper.startswith(_ALLOWED_PREFIXES)
        if not allowed:
            continue
        exempt = name == "JPY_PARENT_PID" or name.startswith("CODEAGENT_SANDBOX_")
        if not exempt and _SECRET.search(upper):
            continue
        kept[name] = value
    return kept


_HOME_SECRETS = (
    ".ssh",
    ".aws",
    ".azure",
    ".gnupg",
    ".docker",
    ".kube",
    ".netrc",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".config/gcloud",
    ".config/gh",
    ".config/rclone",
    ".kaggle",
    ".huggingface",
    ".cache/huggingface/token",
    ".databrickscfg",
    ".pgpass",
    ".my.cnf",
    ".ipython",
    ".bash_history",
    ".python_history",
)


def hidden_paths() -> list[Path]:
    """Existing host paths the sandbox must not read (tokens, keys, histories)."""
    from jupyter_core.paths import jupyter_config_path, jupyter_runtime_dir

    candidates = [Path(jupyter_runtime_dir()), *(Path(p) for p in jupyter_config_path())]
    home = Path.home()
    candidates += [home / name for name in _HOME_SECRETS]
    seen: list[Path] = []
    for path in candidates:
        if path.exists() and path not in seen:
            seen.append(path)
    return seen


def bwrap_works(network: bool) -> bool:
    """Probe once per launch: bwrap may be installed yet refused (no user namespaces)."""
    exe = shutil.which("bwrap")
    if not exe:
        return False
    argv = [exe, "--die-with-parent", "--unshare-pid", "--ro-bind", "/", "/", *_NOOP]
    if not network:
        argv.insert(1, "--unshare-net")
    return _runs(argv)


def unshare_net_works() -> bool:
    """Whether ``unshare`` can give us a network namespace (root, or user namespaces)."""
    exe = shutil.which("unshare")
    if not exe:
        return False
    return _runs([*unshare_net_prefix(exe), *_NOOP])


def unshare_net_prefix(exe: str = "unshare") -> list[str]:
    """``unshare -n`` for root; unprivileged users also need a user namespace (``-r``)."""
    return [exe, "-n"] if os.geteuid() == 0 else [exe, "-r", "-n"]


# A no-op command that needs nothing from PATH.
_NOOP = next(
    ([path] for path in ("/bin/true", "/usr/bin/true") if os.path.exists(path)),
    [sys.executable, "-c", ""],
)


def _runs(argv: list[str]) -> bool:
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


def python_paths() -> list[Path]:
    """Where this Python and its packages live, to bind read-only into the sandbox.

    The sandbox gets a private /tmp and hides some home directories, so a virtual
    environment or a checkout that lives there (as on CI machines) would vanish from under
    the kernel. The working directory (``python -m`` puts it on ``sys.path``) is left out.
    """
    cwd = Path.cwd().resolve()
    found = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    found |= {Path(p).resolve() for p in sys.path if p and Path(p).is_dir()}
    found.discard(cwd)
    kept: list[Path] = []
    for path in sorted(found, key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept


def bwrap_argv(
    *,
    workdir: Path,
    writable: Iterable[Path],
    readable: Iterable[Path],
    network: bool,
    tmp_bytes: int,
) -> list[str]:
    """The bubblewrap prefix: read-only root, private /tmp and /proc, no capabilities.

    Later mounts win, so secrets are hidden first and the workspace and connection
    directory are bound on top (they may live inside /tmp or a hidden directory).
    """
    argv = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--new-session"]
    argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--cap-drop", "ALL"]
    if not network:
        argv.append("--unshare-net")
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    argv += ["--size", str(tmp_bytes), "--tmpfs", "/tmp"]
    for path in hidden_paths():
        if path.is_dir():
            argv += ["--tmpfs", str(path)]
        else:
            argv += ["--ro-bind", "/dev/null", str(path)]
    for path in readable:
        argv += ["--ro-bind", str(path), str(path)]
    for path in [*writable, workdir]:
        argv += ["--bind", str(path), str(path)]
    argv += ["--chdir", str(workdir)]
    return argv
