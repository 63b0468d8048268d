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
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import secrets
import stat
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ..errors import CodeAgentError

RESERVED = ".codeagent"
"""Top-level directory of the workspace that holds server state (session notebooks)."""

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_TMP = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_RESOLVE = 0x08 | 0x04 | 0x02  # RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
_SYS_OPENAT2 = 437  # the same number on every Linux architecture


class ConfinementError(CodeAgentError):
    """A workspace path was refused; the message says why on one line."""


class OutsideError(ConfinementError):
    """The path is absolute, uses ``..``, or names the server's ``.codeagent/`` directory."""


class SymlinkError(ConfinementError):
    """The path names or passes through a symlink, which is never followed."""


class UnsupportedFileError(ConfinementError):
    """Not a regular file or directory (FIFO, socket, device), or a file with hard links."""


class TooLargeError(ConfinementError):
    """The file is bigger than the caller's limit; ``size`` is its size in bytes."""

    def __init__(self, message: str, size: int) -> None:
        super().__init__(message)
        self.size = size


@dataclass(frozen=True)
class Entry:
    """One entry found by ``Workspace.walk`` (``lstat`` view: a symlink is a ``symlink``)."""

    path: str  # workspace-relative, ``/``-separated
    kind: str  # file | dir | symlink | fifo | socket | device
    size: int
    nlink: int


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _load_openat2() -> Callable[[int, str, int], int] | None:
    """``openat2`` through libc's ``syscall``, or None where the kernel or libc lacks it."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    syscall.restype = ctypes.c_long
    syscall.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_char_p, ctypes.c_void_p,
                        ctypes.c_size_t]  # fmt: skip

    def openat2(dir_fd: int, path: str, flags: int) -> int:
        how = _OpenHow(flags, 0, _RESOLVE)
        fd = syscall(_SYS_OPENAT2, dir_fd, os.fsencode(path), ctypes.byref(how), ctypes.sizeof(how))
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err), path)
        return int(fd)

    root = os.open("/", _DIR)
    try:
        os.close(openat2(root, ".", _DIR))  # ENOSYS, or EPERM under seccomp, where unavailable
    except OSError:
        return None
    finally:
        os.close(root)
    return openat2


_OPENAT2 = _load_openat2()


_KINDS = ((stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"), (stat.S_ISLNK, "symlink"),
          (stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"))  # fmt: skip


def kind(mode: int) -> str:
    """``file``, ``dir``, ``symlink``, ``fifo``, ``socket`` or ``device`` for an ``st_mode``."""
    return next((name for test, name in _KINDS if test(mode)), "device")


def _is_a_dir(path: str) -> IsADirectoryError:
    return IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)


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
            fd = self._open_file(root, parts, path)
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
            raise _is_a_dir(path)
        name = parts[-1]
        with _opened_root(self.root) as root:
            parent = self._open_dir(root, parts[:-1], path, create=True)
        try:
            old = None
            with contextlib.suppress(FileNotFoundError):
                old = os.stat(name, dir_fd=parent, follow_symlinks=False)
            if old is not None:
                self._check(old, path)
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
            parent = self._open_dir(root, parts[:-1], path)
        try:
            st = os.stat(parts[-1], dir_fd=parent, follow_symlinks=False)
        finally:
            os.close(parent)
        if stat.S_ISLNK(st.st_mode):
            raise self._symlink(path)
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
                    fd = self._open_dir(root, parts, path)
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

    def _open_file(self, root: int, parts: tuple[str, ...], path: str) -> int:
        """Open a regular file beneath ``root``; refuse everything else after ``fstat``."""
        if not parts:
            raise _is_a_dir(path)
        try:
            if self._openat2:
                fd = self._openat2(root, "/".join(parts), _FILE)
            else:
                parent = self._open_dir(root, parts[:-1], path)
                try:
                    fd = os.open(parts[-1], _FILE, dir_fd=parent)
                finally:
                    os.close(parent)
        except OSError as e:
            raise self._explain(e, path) from None
        try:
            self._check(os.fstat(fd), path)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_dir(
        self, root: int, parts: tuple[str, ...], path: str, *, create: bool = False
    ) -> int:
        """A descriptor of the directory ``parts`` beneath ``root`` (the caller closes it)."""
        if not parts:
            return os.dup(root)
        if self._openat2:
            try:
                # RESOLVE_NO_SYMLINKS covers the last component too (ELOOP); with
                # O_NOFOLLOW added, a final symlink would read as ENOTDIR instead.
                return self._openat2(root, "/".join(parts), _DIR & ~os.O_NOFOLLOW)
            except FileNotFoundError:
                if not create:
                    raise
            except OSError as e:
                raise self._explain(e, path) from None
        fd = os.dup(root)
        try:
            for name in parts:
                try:
                    try:
                        step = os.open(name, _DIR, dir_fd=fd)
                    except FileNotFoundError:
                        if not create:
                            raise
                        with contextlib.suppress(FileExistsError):  # made meanwhile:
                            os.mkdir(name, 0o777, dir_fd=fd)  # the open checks what it is
                        step = os.open(name, _DIR, dir_fd=fd)
                except NotADirectoryError as e:  # O_NOFOLLOW|O_DIRECTORY on a symlink
                    linked = stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
                    raise self._symlink(path) if linked else e from None
                except OSError as e:
                    raise self._explain(e, path) from None
                os.close(fd)
                fd = step
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _check(self, st: os.stat_result, path: str) -> None:
        """Refuse all but a regular file with one link (directories: IsADirectoryError)."""
        if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
            return  # the common case, first
        what = kind(st.st_mode)
        if what == "dir":
            raise _is_a_dir(path)
        if what == "symlink":
            raise self._symlink(path)
        if what != "file":
            raise UnsupportedFileError(
                f"{path!r} is a {what}, not a regular file; only regular files are read or written"
            )
        if st.st_nlink > 1:
            raise UnsupportedFileError(
                f"{path!r} has {st.st_nlink} hard links and may be shared with a file outside "
                "the workspace, so it is not opened; copy it with run_cell to work on it"
            )

    @staticmethod
    def _symlink(path: str) -> SymlinkError:
        return SymlinkError(
            f"path {path!r} goes through a symlink; symlinks in the workspace are not "
            "followed, use the real path"
        )

    def _explain(self, err: OSError, path: str) -> BaseException:
        """Turn the errors our open flags cause into refusals; others stay as they are."""
        if err.errno == errno.ELOOP:
            return self._symlink(path)
        if err.errno == errno.EXDEV:
            return OutsideError(f"path {path!r} is outside the workspace")
        if err.errno == errno.ENXIO:
            return UnsupportedFileError(
                f"{path!r} is a socket or device, not a regular file; only regular files are read"
            )
        return err
