"""The Linux calls a zygote's child confines itself with: unshare, mount, capabilities.

Python 3.11 has no ``os.unshare``, so these go through libc with ``ctypes``. Each raises
``OSError`` with the call's errno: a child that cannot take a step of its confinement must
stop, never run on with less.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_CAP_VERSION_3 = 0x20080522
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    """Move this process into new namespaces (``CLONE_*``)."""
    _check(_libc.unshare(flags), "unshare")


def mount(source: str, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    """mount(2), bytes in and out of libc."""
    fs = fstype.encode() if fstype else None
    _check(
        _libc.mount(source.encode(), target.encode(), fs, flags, data.encode() or None),
        f"mount {target}",
    )


def umount(target: str) -> None:
    """Detach ``target`` (and what is mounted below it)."""
    _check(_libc.umount2(target.encode(), MNT_DETACH), f"umount {target}")


def bind(source: str, target: str, read_only: bool = False) -> None:
    """Bind ``source`` at ``target`` (recursively), read-only when asked."""
    mount(source, target, None, MS_BIND | MS_REC)
    if read_only:
        flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV
        mount("none", target, None, flags)


def map_user(uid: int, outside: int) -> None:
    """In a fresh user namespace: be ``uid`` (and its group), ``outside`` in the parent."""
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    for name in ("uid_map", "gid_map"):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(f"{uid} {outside} 1")


def drop_capabilities() -> None:
    """No capability left in any set, none to regain: bounding set, ambient, no_new_privs."""
    for cap in range(64):
        if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            if ctypes.get_errno() == 22:  # EINVAL: past the last capability this kernel has
                break
            _check(-1, "drop the bounding set")
    _check(_libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient")
    header = (ctypes.c_uint32 * 2)(_CAP_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable; twice (64 bits)
    number = _SYS_CAPSET.get(os.uname().machine)
    if number is None:
        raise OSError(38, "capset: unknown architecture")
    _check(_libc.syscall(number, header, data), "capset")
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def loopback_up() -> None:
    """Bring ``lo`` up in a fresh network namespace (bubblewrap does the same)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, request))[1]  # SIOCGIFFLAGS
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 1))  # SIOCSIFFLAGS, IFF_UP
