"""The shared wheel cache: files kept by their sha256, checked again every time one is used.

A wheel lives at ``CACHE/wheels/<sha256[:2]>/<sha256>/<filename>``. A file is only ever put
there under its own digest (written to a temporary name beside it, hashed while written,
renamed into place), and ``get`` hashes it again before handing it out, so a file changed
on disk since (a full disk, a stray edit) is dropped instead of installed. The cache lies
outside every sandbox (the server's or the user's cache folder).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from pathlib import Path

from packaging.utils import InvalidWheelFilename, parse_wheel_filename

_HEX = re.compile(r"^[0-9a-f]{64}$")
SOURCES = "sources.json"
"""Beside each cached wheel: the package sources (index URLs, wheel folders) it came from."""


def digest(path: Path) -> str:
    """The sha256 of the file at ``path``."""
    sha = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


def plain_filename(name: str) -> str:
    """``name`` if it is a wheel's file name and nothing else (no folder, no ``..``);
    ``ValueError`` otherwise. A name from an index page is never trusted as a path."""
    if not name or "/" in name or "\\" in name or name.startswith(".") or "\0" in name:
        raise ValueError(f"{name!r} is not a wheel file name")
    try:
        parse_wheel_filename(name)
    except InvalidWheelFilename:
        raise ValueError(f"{name!r} is not a wheel file name") from None
    return name


class WheelCache:
    """Wheels by sha256 under ``root`` (created private to the server's user)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def folder(self, sha256: str) -> Path:
        if not _HEX.match(sha256):
            raise ValueError(f"{sha256!r} is not a sha256")
        return self.root / "wheels" / sha256[:2] / sha256

    def get(self, sha256: str, filename: str = "") -> Path | None:
        """The cached wheel with this digest (verified now), or None."""
        if not _HEX.match(sha256 or ""):
            return None
        folder = self.folder(sha256)
        names = [filename] if filename else []
        if folder.is_dir() and not names:
            names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".whl"))
        for name in names:
            path = folder / name
            if path.is_file() and not path.is_symlink():
                if digest(path) == sha256:
                    return path
                with contextlib.suppress(OSError):
                    path.unlink()  # changed since it was cached: never used
        return None

    def staging(self) -> Path:
        """A folder for a download in progress (on the cache's file system, for the rename)."""
        folder = self.root / "partial"
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        return folder

    def put(self, partial: Path, sha256: str, filename: str, sources: list[str]) -> Path:
        """Move a finished download (already hashed as ``sha256``) into its place, and
        note the package ``sources`` it came from (see ``sources``)."""
        folder = self.folder(sha256)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        target = folder / plain_filename(filename)
        os.replace(partial, target)
        os.chmod(target, 0o644)
        known = sorted(self.sources(sha256) | set(sources))
        note = folder / f".sources.{os.getpid()}.part"
        note.write_text(json.dumps(known), encoding="utf-8")
        os.replace(note, folder / SOURCES)
        return target

    def sources(self, sha256: str) -> set[str]:
        """The package sources the cached file ``sha256`` came from: a reinstall takes it
        from the cache only when one of them is still a source of today's policy."""
        try:
            found = json.loads((self.folder(sha256) / SOURCES).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return set()
        return {str(s) for s in found} if isinstance(found, list) else set()
