"""Which host paths a sandbox may see, must not see, and may not use as its workspace.

Used on both sides: ``Sandbox`` refuses a bad workspace before any process exists, and
the launcher checks again (a plain kernel manager or a gateway may start the kernel spec
without ``Sandbox``) and builds its bind list from the same rules.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

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

STATE_DIR = ".codeagent"
"""Server state (session notebooks) inside a workspace; masked in the sandbox."""
PRIVATE_DIR_PREFIX = "codeagent-sbx-"
"""The name of a kernel's own directory (connection file, ipc sockets, scratch), made by our
provisioner for that kernel alone."""


def _home() -> Path:
    return Path.home().resolve()


def jupyter_dirs() -> list[Path]:
    """The user's Jupyter and IPython config, data and runtime directories.

    Whoever can write there runs code in the user's next server or kernel (startup files,
    kernel specs, server config), so a workspace may neither contain nor lie inside them.
    """
    from jupyter_core.paths import jupyter_config_dir, jupyter_data_dir, jupyter_runtime_dir

    ipython = os.environ.get("IPYTHONDIR") or str(Path.home() / ".ipython")
    found = [jupyter_config_dir(), jupyter_data_dir(), jupyter_runtime_dir(), ipython]
    return [Path(p).expanduser().resolve() for p in found]


def hidden_paths() -> list[Path]:
    """Existing host paths the sandbox must not read (tokens, keys, histories, Jupyter state)."""
    from jupyter_core.paths import jupyter_config_path, jupyter_runtime_dir

    candidates = [Path(jupyter_runtime_dir()), *(Path(p) for p in jupyter_config_path())]
    candidates += jupyter_dirs()
    home = _home()
    candidates += [home / name for name in _HOME_SECRETS]
    seen: list[Path] = []
    for path in candidates:
        path = path.resolve()
        if path.exists() and path not in seen:
            seen.append(path)
    return seen


def workspace_problem(workdir: Path) -> str | None:
    """Why ``workdir`` cannot be a sandbox's workspace, in one line; None when it can.

    The workspace is the one place the sandbox may write, so it must not hold the user's
    secrets or anything that configures code the user runs later. The home directory is
    refused rather than masked: masks only cover files that exist at launch, and a
    missing ``.bashrc`` or ``.ipython`` could be created there to run later.
    """
    ws = workdir.resolve()
    home = _home()
    advice = "use a project folder instead (a sub-folder of your home is fine)"
    if ws == Path(ws.anchor):
        return f"refusing workspace {ws}: it is the root of the filesystem; {advice}"
    if home.is_relative_to(ws):
        what = "your home directory" if ws == home else "a parent of your home directory"
        return f"refusing workspace {ws}: it is {what}, with your keys and config; {advice}"
    for path in jupyter_dirs():
        if path.is_relative_to(ws):
            return f"refusing workspace {ws}: it contains Jupyter/IPython state {path}; {advice}"
        if ws.is_relative_to(path):
            return f"refusing workspace {ws}: it lies inside Jupyter/IPython state {path}; {advice}"
    for path in hidden_paths():
        if ws.is_relative_to(path):
            return f"refusing workspace {ws}: it lies inside the secret location {path}; {advice}"
    return None


def python_paths() -> list[Path]:
    """Where this Python and its packages live, to bind read-only into the sandbox.

    The sandbox sees only what is bound, so a virtual environment or a checkout on
    ``sys.path`` must be bound too. The working directory (``python -m`` puts it on
    ``sys.path``) is left out, and so are ``/``, the home directory and its parents:
    binding those would bring everything under them back.
    """
    cwd = Path.cwd().resolve()
    home = _home()
    found = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    found |= {Path(p).resolve() for p in sys.path if p and Path(p).is_dir()}
    found.discard(cwd)
    kept: list[Path] = []
    for path in sorted(found, key=lambda p: len(p.parts)):
        if home.is_relative_to(path):
            continue
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept
