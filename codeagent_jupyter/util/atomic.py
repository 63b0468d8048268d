"""Atomic file writes: a reader (or a crash) sees the old file or the new one, never half.

The text goes to a temp file in the same directory, which is then renamed over the target
(``os.replace`` is atomic within a file system). No fsync: the rename is atomic for a killed
process, which is the failure this guards against.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) in one step; parent folders are created."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_stale(path: Path) -> None:
    """Delete the temp files a writer of ``path`` left when it was killed mid-write."""
    if path.parent.is_dir():
        for stale in path.parent.glob(f".{path.name}.*.tmp"):
            stale.unlink(missing_ok=True)
