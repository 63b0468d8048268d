"""Confined access to the workspace: the one place the server opens paths the sandbox can write.

Code in the sandbox can change the workspace while the server works in it: swap a directory
and a symlink to somewhere else between a check and an open, plant a FIFO that blocks a
reader forever, or hard-link a file from outside. So nothing here checks a path and then
opens it by name. Every path is resolved beneath an open handle of the workspace root
without following any symlink (``openat2`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS``
where the kernel has it, else one ``O_NOFOLLOW`` component at a time), every open is
``O_NONBLOCK``, and the type is checked with ``fstat`` on the open descriptor, never before.

What callers can rely on:

- A path naming or passing through a symlink is refused (``SymlinkError``); only ``walk``
  shows symlinks, as entries. Absolute paths, ``..`` and the top-level ``.codeagent/``
  directory (server state) are refused (``OutsideError``); ``walk`` never lists it.
- Only regular files and directories are opened; FIFOs, sockets and devices are refused, and
  so are regular files with more than one hard link (``UnsupportedFileError``). No call blocks
  on a FIFO.
- ``write_bytes`` replaces the file atomically (temp file + rename inside the same directory
  handle) and never writes through an existing name.
- Refusals are ``ConfinementError`` with a one-line message a model can act on; ordinary
  failures are the ``OSError`` that ``open`` would raise (``FileNotFoundError``, ...).

This module is the API; ``beneath`` resolves and opens (both ways), ``refusals`` says what
is refused and how, ``openat2`` binds the system call.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .beneath import open_dir, open_file
from .openat2 import OPENAT2 as _OPENAT2
from .refusals import (
    ConfinementError,
    OutsideError,
    SymlinkError,
    TooLargeError,
    UnsupportedFileError,
    check_file,
    is_a_dir,
    kind,
    through_symlink,
)

__all__ = [
    "RESERVED",
    "ConfinementError",
    "Entry",
    "OutsideError",
    "SymlinkError",
    "TooLargeError",
    "UnsupportedFileError",
    "Workspace",
    "kind",
]

RESERVED = ".codeagent"
"""Top-level directory of the workspace that holds server state (session notebooks)."""

_TMP = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True)
class Entry:
    """One entry found by ``Workspace.walk`` (``lstat`` view: a symlink is a ``symlink``)."""

    path: str  # workspace-relative, ``/``-separated
    kind: str  # file | dir | symlink | fifo | socket | device
    size: int
    nlink: int


@contextlib.contextmanager
def _opened_root(root: Path) -> Iterator[int]:
    """The workspace root opened as a directory for the length of one call."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


class Workspace:
    """Confined file access beneath ``root`` (a server-chosen directory, taken as given).

    ``openat2=None`` uses ``openat2`` where the kernel has it; ``False`` forces the
    per-component walk (tests cover both); ``True`` requires ``openat2``. Each call opens the
    root afresh and closes every descriptor before it returns, so a ``Workspace`` holds no
    resources and may be shared between threads.
    """

    def __init__(self, root: str | os.PathLike[str], *, openat2: bool | None = None) -> None:
        if openat2 and _OPENAT2 is None:
            raise ValueError("openat2 is not available on this machine")
        self.root = Path(root)
        self._openat2 = None if openat2 is False else _OPENAT2

    @property
    def resolution(self) -> str:
        """How paths are resolved here: ``openat2`` or ``per-component``."""
        return "openat2" if self._openat2 else "per-component"

    @staticmethod
    def split(path: str) -> tuple[str, ...]:
        """The components of a workspace-relative ``path``; refuses paths that leave it."""
        if "\x00" in path:
            raise OutsideError("path must not contain NUL characters")
        text = path.strip()
        if text.startswith(("/", "~")):
            raise OutsideError(
                f"path {path!r} is outside the workspace (absolute); use a path relative to it"
            )
        parts = tuple(p for p in text.split("/") if p not in ("", "."))
        if ".." in parts:
            raise OutsideError(f"path {path!r} is outside the workspace ('..' is not allowed)")
        if parts and parts[0] == RESERVED:
            raise OutsideError(
                f"path {path!r} is in {RESERVED}/, the server's own state; "
                "tools may not read or write it"
            )
        return parts

    @classmethod
    def relpath(cls, path: str) -> str:
        """``path`` normalised (``./a//b`` -> ``a/b``, empty -> ``.``), after ``split``'s checks."""
        return "/".join(cls.split(path)) or "."

    def read_bytes(self, path: str, max_bytes: int) -> bytes:
        """The content of the regular file at ``path``; ``TooLargeError`` beyond ``max_bytes``."""
        parts = self.split(path)
        with _opened_root(self.root) as root:
            fd = open_file(root, parts, path, self._openat2)
        try:
            size = os.fstat(fd).st_size
            if size > max_bytes:
                raise TooLargeError(f"{path} is too big ({size} bytes)", size)
            chunks, total = [], 0
            while total <= max_bytes:  # sized by fstat: one read, then EOF; a growing file
                chunk = os.read(fd, max(size + 1 - total, 1 << 16))  # stops at the limit
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        finally:
            os.close(fd)
        if total > max_bytes:
            raise TooLargeError(f"{path} is too big (over {max_bytes} bytes)", total)
        return b"".join(chunks)

    def write_bytes(self, path: str, data: bytes) -> bool:
        """Replace or create the file at ``path`` (and missing parents); True if it existed.

        An existing file keeps its permission bits (never setuid/setgid). The name is
        replaced by ``rename``, so whatever the entry was a moment ago, nothing outside the
        workspace is written.
        """
        parts = self.split(path)
        if not parts:
            raise is_a_dir(path)
        name = parts[-1]
        with _opened_root(self.root) as root:
            parent = open_dir(root, parts[:-1], path, self._openat2, create=True)
        try:
            old = None
            with contextlib.suppress(FileNotFoundError):
                old = os.stat(name, dir_fd=parent, follow_symlinks=False)
            if old is not None:
                check_file(old, path)
            tmp = f".{name[:64]}.{secrets.token_hex(6)}.tmp"
            fd = os.open(tmp, _TMP, 0o666, dir_fd=parent)
            try:
                with open(fd, "wb") as f:
                    if old is not None:
                        os.fchmod(fd, stat.S_IMODE(old.st_mode) & 0o777)
                    f.write(data)
                os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=parent)
                raise
        finally:
            os.close(parent)
        return old is not None

    def stat(self, path: str) -> os.stat_result:
        """``lstat`` of ``path`` without opening it (a FIFO is reported, not opened)."""
        parts = self.split(path)
        with _opened_root(self.root) as root:
            if not parts:
                return os.fstat(root)
            parent = open_dir(root, parts[:-1], path, self._openat2)
        try:
            st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        finally:
            os.close(parent)
        if stat.S_ISLNK(st.st_mode):
            raise through_symlink(path)
        return st

    def walk(
        self, path: str = ".", *, skip: frozenset[str] = frozenset(), max_entries: int = 50_000
    ) -> Iterator[Entry]:
        """Entries under the directory ``path``, depth first, names sorted in each directory.

        Symlinks are reported, never followed; directories named in ``skip`` (and the
        top-level ``.codeagent/``) are left out. Stops after ``max_entries``. A directory that
        vanishes or turns into a symlink while we walk is skipped.
        """
        top = self.split(path)
        todo = [top]
        count = 0
        with _opened_root(self.root) as root:
            while todo:
                parts = todo.pop()
                try:
                    fd = open_dir(root, parts, path, self._openat2)
                except (ConfinementError, OSError):
                    if parts == top:
                        raise
                    continue
                try:
                    found = self._scan(fd, parts, skip, max_entries - count)
                finally:
                    os.close(fd)
                yield from found
                count += len(found)
                if count >= max_entries:
                    return
                todo += [tuple(e.path.split("/")) for e in reversed(found) if e.kind == "dir"]

    @staticmethod
    def _scan(fd: int, parts: tuple[str, ...], skip: frozenset[str], room: int) -> list[Entry]:
        found: list[Entry] = []
        with os.scandir(fd) as it:
            names = sorted(e.name for e in it)
        for name in names:
            if len(found) >= room:
                break
            if not parts and name == RESERVED:
                continue
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue  # removed since listed
            what = kind(st.st_mode)
            if what == "dir" and name in skip:
                continue
            found.append(Entry("/".join((*parts, name)), what, st.st_size, st.st_nlink))
        return found
