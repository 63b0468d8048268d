"""Matplotlib's font list, built once outside any sandbox and copied into each one.

A fresh, read-only sandbox would otherwise rebuild it (seconds) on every first plot. The
outer stage starts the build on the host (``warm_mpl_cache``); the inner stage copies
whatever is there into the kernel's private matplotlib directory (``copy_font_list``).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path


def host_mpl_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codeagent-jupyter" / "matplotlib"


def warm_mpl_cache(cache: Path, env: dict[str, str]) -> None:
    """Build matplotlib's font list once, outside any sandbox, for later sandboxes to copy
    (in the background: the kernel does not wait for it)."""
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


def copy_font_list(cache: str | None, target: Path) -> None:
    """Copy the host's font list (if it was built) into a kernel's ``MPLCONFIGDIR``."""
    for font_list in Path(cache or "/nonexistent").glob("fontlist-*.json"):
        with contextlib.suppress(OSError):
            shutil.copy(font_list, target / font_list.name)
