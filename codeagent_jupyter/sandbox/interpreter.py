"""The kernel's own interpreter first: what ``python``, ``python3`` and ``pip`` mean inside.

The kernel runs on the server's interpreter (often a virtual environment nobody activated),
while the ``PATH`` it inherits may name another Python, or none: ``python report.py`` from
``run_command`` or ``!python`` would then run without the packages the kernel imports. So
the environment's ``bin/`` goes first on ``PATH``, and where it lacks one of the three
names (a venv with only ``python3``, a system Python without ``python``) a small shim in the
kernel's private scratch folder provides it. Subprocesses inherit the result.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import MutableMapping
from pathlib import Path

SHIM_NAMES = ("python", "python3", "pip")

ARROW_POOL = {"ARROW_DEFAULT_MEMORY_POOL": "system"}
"""pyarrow's default (mimalloc) pool reserves a 1 GiB arena on the first string operation
(pandas 3 backs text with pyarrow), which counts against the sandbox's RLIMIT_DATA: the
system allocator takes only what is used."""


def _shim(python: str, name: str) -> str:
    module = " -m pip" if name == "pip" else ""
    return f'#!/bin/sh\nexec {_quote(python)}{module} "$@"\n'


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def prefer_kernel_python(env: MutableMapping[str, str], scratch: Path) -> str:
    """Put this interpreter's ``bin/`` (then shims for missing names, in ``scratch/bin``)
    first on ``env['PATH']``; also set the allocator settings in ``ARROW_POOL`` unless the
    operator set them. Returns the new ``PATH``."""
    python = sys.executable
    own_bin = Path(python).parent
    shims = scratch / "bin"
    with contextlib.suppress(OSError):
        shims.mkdir(parents=True, exist_ok=True, mode=0o700)
        for name in SHIM_NAMES:
            if not os.access(own_bin / name, os.X_OK):
                target = shims / name
                target.write_text(_shim(python, name))
                target.chmod(0o700)
    rest = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p]
    first = [str(own_bin), str(shims)]
    env["PATH"] = os.pathsep.join(first + [p for p in rest if p not in first])
    for name, value in ARROW_POOL.items():
        env.setdefault(name, value)
    return env["PATH"]
