"""Unpack a wheel into a sandbox's overlay folder, in the server, with pypa's ``installer``.

Nothing from the wheel runs: ``installer`` only copies files and writes launchers (no
``.pth`` is processed, no ``sitecustomize`` imported, no bytecode compiled here). What it
writes is held to the overlay more strictly than a plain install needs, because the wheel
is untrusted:

- every archive entry and every ``RECORD`` path is a relative path inside the overlay: an
  absolute path, ``..``, a backslash or a drive is refused before a file is written;
- a symlink entry is refused, and no file is written through a symlink (each folder on the
  way is checked, each file created with ``O_NOFOLLOW``/``O_EXCL``);
- files get plain modes (0644, or 0755 for executables): never a setuid, setgid or sticky
  bit, and never the process umask's race (``installer`` would set it to read it);
- the ``RECORD`` is checked against the archive (names, sizes, hashes) before any write.

A wheel of a package already in the overlay replaces it: the old version's files (from its
``RECORD``, each path checked the same way) are removed first.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import stat
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.exceptions import InstallerError
from installer.records import Hash, RecordEntry, parse_record_file
from installer.sources import WheelFile
from installer.utils import copyfileobj_with_hashing
from packaging.utils import canonicalize_name, parse_wheel_filename

from ..errors import ToolError

INSTALLER = b"codeagent-jupyter\n"


class UnsafeWheel(ToolError):
    """A wheel that would write outside the overlay, or is not what its RECORD says."""


def safe_relative(path: str) -> str:
    """``path`` as a relative POSIX path with no way out; ``UnsafeWheel`` otherwise."""
    if not path or "\\" in path or "\0" in path or path.startswith("/") or ":" in path[:3]:
        raise UnsafeWheel(f"the wheel names the path {path[:120]!r}, outside its folder")
    parts = path.split("/")
    if any(part == ".." for part in parts):
        raise UnsafeWheel(f"the wheel names the path {path[:120]!r}, outside its folder")
    return posixpath.normpath(path)


def check_archive(archive: zipfile.ZipFile) -> None:
    """Refuse entries that climb out or are symlinks (before anything is written)."""
    for item in archive.infolist():
        safe_relative(item.filename.rstrip("/") or item.filename)
        mode = item.external_attr >> 16
        if stat.S_ISLNK(mode):
            raise UnsafeWheel(f"the wheel holds a symbolic link ({item.filename[:120]!r})")


def _inside(root: Path, relative: str) -> Path:
    """``root/relative``, with every existing folder on the way a real folder (no link)."""
    clean = safe_relative(relative)
    target = Path(os.path.abspath(root / clean))
    if not target.is_relative_to(root):
        raise UnsafeWheel(f"the wheel names the path {relative[:120]!r}, outside its folder")
    here = root
    for part in target.relative_to(root).parts[:-1]:
        here = here / part
        if here.is_symlink() or (here.exists() and not here.is_dir()):
            raise UnsafeWheel(f"{relative[:120]!r} would be written through a link")
    return target


class OverlayDestination(SchemeDictionaryDestination):
    """``installer``'s destination for one overlay, with the checks of this module."""

    def __init__(self, overlay: Path, name: str, interpreter: str) -> None:
        self.overlay = Path(os.path.abspath(overlay))
        schemes = {
            "purelib": str(self.overlay),
            "platlib": str(self.overlay),
            "scripts": str(self.overlay / "bin"),
            "headers": str(self.overlay / "include" / name),
            "data": str(self.overlay / "data-files"),
        }
        super().__init__(scheme_dict=schemes, interpreter=interpreter, script_kind="posix")

    def _path_with_destdir(self, scheme: Any, path: str) -> Path:
        base = Path(self.scheme_dict[scheme]).relative_to(self.overlay).as_posix()
        return _inside(self.overlay, posixpath.join(base, path) if base != "." else path)

    def write_to_fs(
        self, scheme: Any, path: str, stream: BinaryIO, is_executable: bool
    ) -> RecordEntry:
        target = self._path_with_destdir(scheme, path)
        folder = target.parent
        for parent in reversed([folder, *folder.parents]):
            if parent.is_relative_to(self.overlay) and not parent.exists():
                parent.mkdir(mode=0o755)
        _inside(self.overlay, target.relative_to(self.overlay).as_posix())  # after mkdir
        if target.is_symlink() or target.exists():
            if target.is_dir() and not target.is_symlink():
                raise UnsafeWheel(f"{path[:120]!r} would replace a folder")
            target.unlink()  # a file another package shipped too: the newer one wins
        mode = 0o755 if is_executable else 0o644
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        fd = os.open(target, flags, mode)
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)  # exactly this mode, whatever the umask
            digest, size = copyfileobj_with_hashing(stream, f, self.hash_algorithm)
        return RecordEntry(path, Hash(self.hash_algorithm, digest), size)


def install_wheel(wheel: Path, overlay: Path, *, interpreter: str) -> None:
    """Unpack ``wheel`` into ``overlay`` (replacing an earlier version of its package)."""
    name = canonicalize_name(parse_wheel_filename(wheel.name)[0])
    try:
        with zipfile.ZipFile(wheel) as archive:
            check_archive(archive)
        with WheelFile.open(wheel) as source:
            for line in source.read_dist_info("RECORD").splitlines():
                if line.strip():
                    safe_relative(next(iter(parse_record_file([line])))[0])
            source.validate_record()
            remove_installed(overlay, name)
            destination = OverlayDestination(overlay, name, interpreter)
            install(source, destination, {"INSTALLER": INSTALLER})
    except UnsafeWheel as e:
        raise UnsafeWheel(f"install_packages: refusing {wheel.name}: {e}") from None
    except (InstallerError, ValueError, KeyError, zipfile.BadZipFile) as e:
        reason = " ".join(str(e).split())[:300] or type(e).__name__
        raise ToolError(f"install_packages: {wheel.name} is not a valid wheel: {reason}") from None


def installed_dist_infos(overlay: Path, name: str) -> list[Path]:
    """The overlay's ``.dist-info`` folders of the package ``name`` (any spelling)."""
    found = []
    with contextlib.suppress(FileNotFoundError):
        for entry in overlay.iterdir():
            if not entry.name.endswith(".dist-info") or "-" not in entry.name:
                continue
            if canonicalize_name(entry.name[: -len(".dist-info")].rsplit("-", 1)[0]) == name:
                found.append(entry)
    return found


def remove_installed(overlay: Path, name: str) -> None:
    """Remove what an earlier version of ``name`` installed (paths of its RECORD that
    stay inside the overlay; anything else in it is ignored, never followed)."""
    root = Path(os.path.abspath(overlay))
    for dist_info in installed_dist_infos(root, name):
        if dist_info.is_symlink() or not dist_info.is_dir():
            with contextlib.suppress(OSError):
                dist_info.unlink()
            continue
        folders = set()
        record = dist_info / "RECORD"
        lines = []
        if record.is_file() and not record.is_symlink():
            lines = record.read_text(encoding="utf-8", errors="replace").splitlines()
        for line in lines:
            try:
                path = _inside(root, next(iter(parse_record_file([line])))[0])
            except (UnsafeWheel, StopIteration, ValueError):
                continue  # a path out of the overlay (or garbage): never touched
            if path.is_symlink() or path.is_file():
                path.unlink()
                folders.add(path.parent)
        for leftover in sorted(dist_info.iterdir()) if dist_info.is_dir() else []:
            if leftover.is_file() or leftover.is_symlink():
                leftover.unlink()
        with contextlib.suppress(OSError):
            dist_info.rmdir()
        for folder in sorted(folders, key=lambda p: len(p.parts), reverse=True):
            while folder != root and folder.is_relative_to(root):
                try:
                    folder.rmdir()
                except OSError:
                    break
                folder = folder.parent
