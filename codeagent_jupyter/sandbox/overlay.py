"""The sandbox's package overlay: a folder of installed wheels it may import but not change.

Each kernel that our provisioner starts has a private directory; its ``packages`` folder is
where the server installs wheels for that sandbox (``install_packages``). The launcher puts
it on ``PYTHONPATH`` before the kernel starts (so the kernel, ``!python`` and
``run_command`` scripts all see it, and a package installed later is importable in the
running kernel once import caches are invalidated) and binds it read-only over the
writable connection directory: the sandbox can neither add a module there nor replace it.

pip inside the sandbox cannot reach any index (there is no network): ``PIP_NO_INDEX``
makes it fail at once instead of retrying for minutes, and ``%pip`` says which tool to use.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

PACKAGES_DIR = "packages"
"""The overlay's name inside a kernel's private directory."""
OVERLAY_ENV = "CODEAGENT_SANDBOX_PACKAGES"
"""The overlay's path, in the kernel's environment."""
PIP_MESSAGE = (
    "pip cannot reach a package index from this sandbox (it has no network). Ask the agent "
    "to install packages with its install_packages tool: it fetches wheels from the "
    "server's index, under the administrator's policy, with your approval."
)


def prepare(overlay: Path, env: dict[str, str]) -> None:
    """Create ``overlay`` (outside the sandbox, before it starts) and point the kernel's
    environment at it; pip in the sandbox is told there is no index."""
    overlay.mkdir(mode=0o755, exist_ok=True)
    earlier = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = str(overlay) + (os.pathsep + earlier if earlier else "")
    env[OVERLAY_ENV] = str(overlay)
    env["PIP_NO_INDEX"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"


def on_path() -> None:
    """In the kernel: the overlay on ``sys.path`` ahead of site-packages, as ``PYTHONPATH``
    would put it (needed where the launcher did not re-execute Python)."""
    overlay = os.environ.get(OVERLAY_ENV)
    if not overlay or overlay in sys.path:
        return
    site = next((i for i, p in enumerate(sys.path) if p.endswith("-packages")), len(sys.path))
    sys.path.insert(site, overlay)


def quiet_pip(shell: Any) -> None:
    """Replace IPython's ``%pip`` with one line naming the tool that installs packages."""

    def pip(line: str = "", cell: str | None = None) -> None:
        print(PIP_MESSAGE, file=sys.stderr)

    shell.register_magic_function(pip, "line", "pip")
