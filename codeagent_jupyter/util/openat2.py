"""``openat2(2)`` with ``RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS``, where the kernel has it.

Python's ``os`` module has no binding for it, so it is called through libc's ``syscall``
with ctypes. ``OPENAT2`` is that call, or None where the platform, the kernel (before
5.6) or a seccomp filter does not allow it: ``confined`` then resolves one component at a
time with ``O_NOFOLLOW`` instead. Kept apart from ``confined`` because it is the one
platform-specific piece: what a path may be is decided there, not here.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable

RESOLVE = 0x08 | 0x04 | 0x02  # RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
_SYS_OPENAT2 = 437  # the same number on every Linux architecture
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _load() -> Callable[[int, str, int], int] | None:
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
        how = _OpenHow(flags, 0, RESOLVE)
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


OPENAT2 = _load()
"""``openat2(dir_fd, path, flags) -> fd`` beneath ``dir_fd``, or None where unavailable."""
