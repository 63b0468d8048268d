"""Removing one regular file of the workspace, beneath its root, never through a link.

"Revert this file" removes a file the session created. The workspace is written by the code
we distrust, so the path is walked one ``O_NOFOLLOW`` directory at a time from a handle of
the root (as ``confined.Workspace`` does), and the last name is examined and unlinked
relative to its parent's descriptor. What callers can rely on: only a regular file is
removed; a symlink anywhere on the path, a directory, a FIFO or a device is refused with
the same one-line ``ConfinementError`` the rest of the workspace access raises, and nothing
outside the workspace is touched. Should the name be swapped for a symlink between the
check and the unlink, the unlink removes that link itself, never what it points to.
"""

from __future__ import annotations

import errno
import os
import stat

from .confined import SymlinkError, UnsupportedFileError, Workspace, kind

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def remove_file(workspace: Workspace, path: str) -> None:
    """Unlink the regular file at ``path`` (``FileNotFoundError`` when it is not there)."""
    parts = workspace.split(path)
    if not parts:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    fd = os.open(workspace.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for name in parts[:-1]:
            try:
                step = os.open(name, _DIR, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, name):
                    raise _symlink(path) from None
                raise
            os.close(fd)
            fd = step
        found = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        if stat.S_ISLNK(found.st_mode):
            raise _symlink(path)
        if not stat.S_ISREG(found.st_mode):
            raise UnsupportedFileError(
                f"{path!r} is a {kind(found.st_mode)}, not a regular file; it is not removed"
            )
        os.unlink(parts[-1], dir_fd=fd)
    finally:
        os.close(fd)


def _is_link(fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _symlink(path: str) -> SymlinkError:
    return SymlinkError(f"path {path!r} goes through a symlink; symlinks are not followed")
