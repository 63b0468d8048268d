"""Tests write only into temporary folders: the guard that makes a run prove it.

Before any test runs, the Jupyter and IPython folders of the run (data, config, runtime,
IPython profile, JupyterLab settings and workspaces) are pointed at a fresh temporary
folder, so nothing a test starts can reach the user's own: no session notebook in their
``codeagent/sessions``, no kernel history in their profile. After the run two things must
hold, or the run fails and says what broke them:

- the checkout is as it was: no tracked file changed, no file appeared that git would see;
- the run's Jupyter data and config folders are still empty: every test that starts a
  server or writes a session gave it a folder of its own (``tmp_path``), so what it wrote
  would not have landed in the user's folders either.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

REDIRECTED = {
    "JUPYTER_DATA_DIR": "data",
    "JUPYTER_CONFIG_DIR": "config",
    "JUPYTER_RUNTIME_DIR": "runtime",
    "IPYTHONDIR": "ipython",
    "JUPYTERLAB_SETTINGS_DIR": "lab-settings",
    "JUPYTERLAB_WORKSPACES_DIR": "lab-workspaces",
}
"""Each variable that names a folder of the user's Jupyter state, and its name in the run's."""

MUST_STAY_EMPTY = ("JUPYTER_DATA_DIR", "JUPYTER_CONFIG_DIR")
"""Where a test that forgot its own folder would have written into the user's: sessions,
snapshots, signing secrets, server config. (Runtime files and kernel history come and go
with every kernel a test starts; those folders are redirected, not checked.)"""

ROOT_ENV = "CODEAGENT_TEST_JUPYTER_HOME"
"""The run's folder, for the test workers (they inherit it and must not make their own)."""


def redirect(environ: dict[str, str] | os._Environ[str]) -> Path:
    """Point the Jupyter variables of ``environ`` at a new temporary folder; returns it.

    Workers started by the run find ``ROOT_ENV`` already set and keep the same folder.
    """
    existing = environ.get(ROOT_ENV)
    if existing:
        return Path(existing)
    root = Path(tempfile.mkdtemp(prefix="codeagent-tests-jupyter-"))
    for name, sub in REDIRECTED.items():
        (root / sub).mkdir()
        environ[name] = str(root / sub)
    environ[ROOT_ENV] = str(root)
    return root


def leftovers(root: Path) -> list[str]:
    """Files in the run's folders that must stay empty, as ``VARIABLE/relative/path``."""
    found = []
    for name in MUST_STAY_EMPTY:
        folder = root / REDIRECTED[name]
        found += [
            f"{name}/{p.relative_to(folder)}" for p in sorted(folder.rglob("*")) if p.is_file()
        ]
    return found


def stop_zygotes(root: Path) -> None:
    """End the shared zygotes the run's processes started (``codeagent run --start zygote``
    leaves one per workspace for 15 idle minutes): in the run's runtime folder, so its own."""
    from codeagent_jupyter.sandbox.zygote_shared import FOLDER_NAME, stop_zygote

    for folder in (root / REDIRECTED["JUPYTER_RUNTIME_DIR"] / FOLDER_NAME).glob("*"):
        stop_zygote(folder)


def remove(root: Path) -> None:
    shutil.rmtree(root, ignore_errors=True)


@dataclass(frozen=True)
class TreeState:
    """What git sees of a checkout: each tracked file's size and change time, and the
    untracked files it does not ignore."""

    tracked: dict[str, tuple[int, int]]
    untracked: frozenset[str]

    @classmethod
    def of(cls, checkout: Path) -> TreeState | None:
        """The state of ``checkout``, or None when it is not a git work tree (an sdist)."""
        try:
            files = _git(checkout, "ls-files", "-z")
            others = _git(checkout, "ls-files", "-z", "--others", "--exclude-standard")
        except (OSError, subprocess.CalledProcessError):
            return None
        tracked = {}
        for name in filter(None, files.split("\0")):
            try:
                stat = (checkout / name).lstat()
            except FileNotFoundError:
                tracked[name] = (-1, -1)
                continue
            tracked[name] = (stat.st_size, stat.st_mtime_ns)
        return cls(tracked, frozenset(filter(None, others.split("\0"))))

    def changes_since(self, before: TreeState) -> list[str]:
        """``changed: path`` and ``new: path`` lines, sorted (empty when nothing changed)."""
        changed = [
            f"changed: {name}"
            for name, state in self.tracked.items()
            if before.tracked.get(name, state) != state
        ]
        changed += [f"removed from git: {n}" for n in before.tracked.keys() - self.tracked.keys()]
        changed += [f"new: {name}" for name in self.untracked - before.untracked]
        return sorted(changed)


def _git(checkout: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(checkout), *args], capture_output=True, text=True, check=True
    ).stdout
