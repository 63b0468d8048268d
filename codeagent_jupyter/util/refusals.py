"""What ``confined`` refuses, and how each refusal is said: one line a model can act on.

Kept apart from ``confined.Workspace`` (how a path is opened) because these are plain
functions of a path and an ``fstat`` result, the same for both ways of resolving.
"""

from __future__ import annotations

import errno
import os
import stat

from ..errors import CodeAgentError


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


_KINDS = ((stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"), (stat.S_ISLNK, "symlink"),
          (stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"))  # fmt: skip


def kind(mode: int) -> str:
    """``file``, ``dir``, ``symlink``, ``fifo``, ``socket`` or ``device`` for an ``st_mode``."""
    return next((name for test, name in _KINDS if test(mode)), "device")


def is_a_dir(path: str) -> IsADirectoryError:
    return IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)


def through_symlink(path: str) -> SymlinkError:
    return SymlinkError(
        f"path {path!r} goes through a symlink; symlinks in the workspace are not "
        "followed, use the real path"
    )


def check_file(st: os.stat_result, path: str) -> None:
    """Refuse all but a regular file with one link (directories: IsADirectoryError)."""
    if stat.S_ISREG(st.st_mode) and st.st_nlink == 1:
        return  # the common case, first
    what = kind(st.st_mode)
    if what == "dir":
        raise is_a_dir(path)
    if what == "symlink":
        raise through_symlink(path)
    if what != "file":
        raise UnsupportedFileError(
            f"{path!r} is a {what}, not a regular file; only regular files are read or written"
        )
    if st.st_nlink > 1:
        raise UnsupportedFileError(
            f"{path!r} has {st.st_nlink} hard links and may be shared with a file outside "
            "the workspace, so it is not opened; copy it with run_cell to work on it"
        )


def explain(err: OSError, path: str) -> BaseException:
    """Turn the errors our open flags cause into refusals; others stay as they are."""
    if err.errno == errno.ELOOP:
        return through_symlink(path)
    if err.errno == errno.EXDEV:
        return OutsideError(f"path {path!r} is outside the workspace")
    if err.errno == errno.ENXIO:
        return UnsupportedFileError(
            f"{path!r} is a socket or device, not a regular file; only regular files are read"
        )
    return err
