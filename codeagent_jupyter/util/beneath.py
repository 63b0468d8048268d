"""Opening a path beneath a directory handle without following any symlink, never blocking.

``openat2`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`` where the kernel has it (one
call), else one ``O_NOFOLLOW`` component at a time; every open is ``O_NONBLOCK``, and a file
is checked with ``fstat`` on the open descriptor, never before. ``confined.Workspace`` is
the API on top; this is the resolution under it, both ways, and nothing else.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable

from .refusals import check_file, explain, is_a_dir, through_symlink

OpenAt2 = Callable[[int, str, int], int]
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def open_file(root: int, parts: tuple[str, ...], path: str, openat2: OpenAt2 | None) -> int:
    """Open a regular file beneath ``root``; refuse everything else after ``fstat``."""
    if not parts:
        raise is_a_dir(path)
    try:
        if openat2:
            fd = openat2(root, "/".join(parts), FILE_FLAGS)
        else:
            parent = open_dir(root, parts[:-1], path, openat2)
            try:
                fd = os.open(parts[-1], FILE_FLAGS, dir_fd=parent)
            finally:
                os.close(parent)
    except OSError as e:
        raise explain(e, path) from None
    try:
        check_file(os.fstat(fd), path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_dir(
    root: int,
    parts: tuple[str, ...],
    path: str,
    openat2: OpenAt2 | None,
    *,
    create: bool = False,
) -> int:
    """A descriptor of the directory ``parts`` beneath ``root`` (the caller closes it)."""
    if not parts:
        return os.dup(root)
    if openat2:
        try:
            # RESOLVE_NO_SYMLINKS covers the last component too (ELOOP); with
            # O_NOFOLLOW added, a final symlink would read as ENOTDIR instead.
            return openat2(root, "/".join(parts), DIR_FLAGS & ~os.O_NOFOLLOW)
        except FileNotFoundError:
            if not create:
                raise
        except OSError as e:
            raise explain(e, path) from None
    fd = os.dup(root)
    try:
        for name in parts:
            try:
                try:
                    step = os.open(name, DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    with contextlib.suppress(FileExistsError):  # made meanwhile:
                        os.mkdir(name, 0o777, dir_fd=fd)  # the open checks what it is
                    step = os.open(name, DIR_FLAGS, dir_fd=fd)
            except NotADirectoryError as e:  # O_NOFOLLOW|O_DIRECTORY on a symlink
                linked = stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
                raise through_symlink(path) if linked else e from None
            except OSError as e:
                raise explain(e, path) from None
            os.close(fd)
            fd = step
    except BaseException:
        os.close(fd)
        raise
    return fd
