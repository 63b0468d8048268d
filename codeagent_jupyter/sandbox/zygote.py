"""The zygote: a confined process with the data stack imported that forks sandboxes.

It runs inside its own bubblewrap (``zygote_host.start``) as root of that bubblewrap's user
namespace, so that it may still build namespaces; it never runs model code. It imports
numpy, pandas and matplotlib (Agg) and ipykernel's modules before any thread or ZMQ context
exists, then answers requests on a unix socket in a host folder that only the host and the
zygote can reach. For each request it forks a child that, before any model code runs:

1. takes its own mount, pid, network, ipc, uts and cgroup namespaces (``unshare``); its
   first child is pid 1 of the new pid namespace and forks the kernel at once, which
   mounts a fresh ``/proc`` that shows only the namespace's processes;
2. covers each shared host folder (the workspaces' root, the kernel folders' root) with an
   empty read-only tmpfs and binds back only its own workspace and kernel folder, and gets
   its own ``/tmp``;
3. enters a user namespace of its own as uid 65534 and drops every capability for good
   (bounding and ambient sets emptied, ``no_new_privs``), so no mount can be undone; pid 1
   does the same in a user namespace of its own before the kernel goes on;
4. closes every descriptor of the zygote, reseeds ``random`` and numpy's global state, and
   becomes an ipykernel through the launcher's inner stage (limits, private scratch).

A request is one JSON line; the reply is one JSON line with the child's pid (in the
zygote's pid namespace). The child then waits for one more line from the host, sent once
the host has moved it into its own cgroup: the kernel's environment, which records what was
enforced. ``{"alive": pid}`` and ``{"kill": pid}`` ask about and end a child. See
docs/security.md, "The zygote".
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import re
import select
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from . import namespaces as ns
from .isolation import REFUSED_FILE
from .zygote_pages import ModuleFiles, first_uses

PRELOADED = ("numpy", "pandas", "matplotlib.pyplot")
OWN = ns.CLONE_NEWNS | ns.CLONE_NEWPID | ns.CLONE_NEWNET | ns.CLONE_NEWIPC | ns.CLONE_NEWUTS
OWN |= ns.CLONE_NEWCGROUP  # taken after the host moved the fork into its own cgroup
_KERNEL_MODULES = (
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.zmqshell",
    "ipykernel.debugger",
    "IPython.core.completerlib",
    "IPython.core.debugger",
    "IPython.extensions.storemagic",
    "IPython.core.oinspect",
    "IPython.utils.wildcard",
    "tornado.platform.asyncio",
    "faulthandler",
    "matplotlib_inline.backend_inline",
    "sqlite3",
    "psutil",
    "codeagent_jupyter.sandbox.inner",
)
LEASE = 3
"""The descriptor a fork's watcher keeps of the request's connection (see ``_wait``)."""
_PROC_COVERS = ("sys", "sysrq-trigger", "irq", "bus")
"""What bubblewrap makes read-only in /proc; the child's fresh /proc gets the same."""


def _warm() -> None:
    """Import what every sandbox would import, in this process only, without threads."""
    os.environ["MPLBACKEND"] = "Agg"
    for name in PRELOADED:  # what is not installed is simply not preloaded
        try:
            __import__(name)
        except ImportError:
            continue
    for name in _KERNEL_MODULES:  # what a kernel's start imports: most of its time
        try:
            __import__(name)
        except ImportError:
            continue
    first_uses()  # what a first DataFrame and figure build, built once for every fork
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:  # the inline backend, as a cold kernel has it (its MPLBACKEND)
        pyplot.switch_backend("module://matplotlib_inline.backend_inline")


def _cover(root: str, keep: str, held: int) -> None:
    """Hide ``root`` behind an empty read-only tmpfs, with only ``keep`` (open as ``held``)
    bound back. A root under /tmp is already hidden by the fresh /tmp."""
    under_tmp = Path(root).is_relative_to("/tmp")  # the fresh /tmp hid it: bind it back
    covered = keep != root and not under_tmp  # a zygote for one workspace hides nothing
    if not covered and not under_tmp:
        os.close(held)
        return
    if covered:
        ns.mount("tmpfs", root, "tmpfs", ns.MS_NOSUID | ns.MS_NODEV, "size=1048576,mode=755")
    os.makedirs(keep, exist_ok=True)
    ns.bind(f"/proc/self/fd/{held}", keep)
    os.close(held)
    if covered:
        ns.mount("tmpfs", root, None, ns.MS_REMOUNT | ns.MS_RDONLY | ns.MS_NOSUID | ns.MS_NODEV)


def _mounts_below(folder: str, skip: list[str]) -> list[str]:
    """The outermost mount points below ``folder``, except those at or below ``skip``.

    The fresh ``/tmp`` would hide what the zygote's bubblewrap bound below its own (the
    Python environment of a checkout under ``/tmp``): the fork binds these back. The
    workspaces' and kernel folders' roots are skipped: ``_cover`` binds back only its own.
    """
    with open("/proc/self/mountinfo") as f:
        points = [_unescape(line.split()[4]) for line in f]
    found = sorted(
        {p for p in points if Path(p).is_relative_to(folder) and p != folder}
        - {p for p in points for s in skip if Path(p).is_relative_to(s)}
    )
    outer: list[str] = []
    for point in found:  # sorted: a parent comes before what is mounted below it
        if not any(Path(point).is_relative_to(o) for o in outer):
            outer.append(point)
    return outer


def _unescape(field: str) -> str:
    """A mountinfo path: space, tab, newline and backslash are written as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def _fresh_proc() -> None:
    """A /proc of this pid namespace, read-only where bubblewrap's is."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f]
    for point in sorted((p for p in points if p.startswith("/proc/")), key=len, reverse=True):
        ns.umount(point)  # a proc mount with nothing over it may be mounted again
    ns.mount("proc", "/proc", "proc", ns.MS_NOSUID | ns.MS_NODEV)
    for cover in _PROC_COVERS:
        if os.path.exists(f"/proc/{cover}"):
            ns.bind(f"/proc/{cover}", f"/proc/{cover}", read_only=True)


def _confine(request: dict[str, Any]) -> None:
    """Steps 1-3 of the module's list, in the kernel's process (pid 2 of its namespace)."""
    ns.mount("none", "/", None, ns.MS_REC | ns.MS_PRIVATE)
    pairs = [(request["workspaces"], request["workspace"])]
    pairs.append((request["kernels"], request["kernel_dir"]))
    held = [os.open(keep, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW) for _, keep in pairs]
    below = _mounts_below("/tmp", [root for root, _ in pairs])
    old_tmp = os.open("/tmp", os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW)
    size = int(request["tmp_bytes"])
    ns.mount("tmpfs", "/tmp", "tmpfs", ns.MS_NOSUID | ns.MS_NODEV, f"size={size},mode=1777")
    for point in below:  # the Python environment of a checkout below /tmp, read-only as it was
        os.makedirs(point, exist_ok=True)
        ns.bind(f"/proc/self/fd/{old_tmp}/{os.path.relpath(point, '/tmp')}", point, True)
    os.close(old_tmp)
    for (root, keep), fd in zip(pairs, held, strict=True):
        _cover(root, keep, fd)
    state = Path(request["workspace"]) / ".codeagent"
    if state.is_dir() and not state.is_symlink():
        ns.mount("tmpfs", str(state), "tmpfs", ns.MS_NOSUID | ns.MS_NODEV, "size=4096")
    _fresh_proc()
    ns.loopback_up()
    ns.unshare(ns.CLONE_NEWUSER)
    ns.map_user(65534, 0)
    ns.drop_capabilities()


def _reseed() -> None:
    """What fork copies and must not be: the random generators' state."""
    import random

    random.seed()  # (CPython also does this after fork; numpy does not)
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()


def _first(request: dict[str, Any], files: ModuleFiles) -> None:
    """Pid 1 of the new namespaces: forks the kernel at once, and the kernel confines the
    namespaces and itself (steps 2 and 3); this process then enters a user namespace of
    its own as uid 65534 without capabilities too, before the kernel may go on, and reaps
    orphans until the kernel ends. (The confinement's work is done in the kernel's pages,
    not first in this process's and again in the kernel's: about 0.9 MiB less per fork.)"""
    mine, theirs = socket.socketpair()
    kernel = os.fork()
    if kernel == 0:
        mine.close()
        try:
            _confine(request)
            theirs.sendall(b"c")  # the mounts are done: pid 1 may drop its privileges
            if theirs.recv(1) != b"d":  # and has: only then does model code come
                os._exit(70)
            theirs.close()
            _become_kernel(request, files)
            os._exit(0)  # the kernel ended as asked
        except BaseException as e:  # a step that fails stops the sandbox, loudly
            _refuse(request, e)
        os._exit(70)
    theirs.close()
    signal.signal(signal.SIGTERM, lambda *_: os.kill(kernel, signal.SIGKILL))
    if mine.recv(1) == b"c":
        ns.unshare(ns.CLONE_NEWUSER)
        ns.map_user(65534, 0)
        ns.drop_capabilities()
        mine.sendall(b"d")
    mine.close()
    while True:
        pid, status = os.wait()
        if pid == kernel:
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _become_kernel(request: dict[str, Any], files: ModuleFiles) -> None:
    """The confined fork becomes an ipykernel (step 4)."""
    _reseed()
    os.environ.clear()
    os.environ.update(request["env"])
    from .inner import inner  # imported by _warm

    inner(
        Path(request["connection_file"]),
        list(request.get("args", [])),
        starting=files.read_by_kernel(),
    )


def _refuse(request: dict[str, Any], error: BaseException) -> None:
    """Say why this fork stops where the host reads a launcher's refusal (its stderr is
    already ``/dev/null``): the kernel folder, bound back or still in view."""
    reason = f"the zygote's fork could not confine itself: {type(error).__name__}: {error}"
    with contextlib.suppress(OSError):
        Path(request["kernel_dir"], REFUSED_FILE).write_text(reason + "\n")


def _close_descriptors(lease: int) -> None:
    """Nothing of the zygote's: its listening socket, and its stdio (a pipe to the host).
    The request's connection (the host's lease) stays, as ``LEASE``, in this process only:
    the pid namespace's first process closes it before it confines itself."""
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.dup2(lease, LEASE, inheritable=False)
    os.closerange(LEASE + 1, 1 << 16)


def _wait(first: int) -> int:
    """``first``'s exit code; ``first`` (so the whole pid namespace) is killed as soon as the
    host's end of the lease closes: the process that asked for this sandbox is gone, even
    killed outright, and a zygote that outlives it (a shared one) must not keep its kernel."""
    try:
        pidfd = os.pidfd_open(first)
    except (AttributeError, OSError):  # before Linux 5.3: the lease is not watched
        return os.waitstatus_to_exitcode(os.waitpid(first, 0)[1]) & 0xFF
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(LEASE, select.POLLIN)
    while True:
        for fd, _ in poller.poll():
            if fd == pidfd:
                return os.waitstatus_to_exitcode(os.waitpid(first, 0)[1]) & 0xFF
            try:
                ended = not os.read(LEASE, 64)
            except OSError:
                ended = True
            if ended:
                poller.unregister(LEASE)
                with contextlib.suppress(OSError):
                    os.kill(first, signal.SIGKILL)


def _child(request: dict[str, Any], lease: int, files: ModuleFiles) -> None:
    """Runs in the fork; never returns."""
    code = 70
    try:
        _close_descriptors(lease)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        ns.unshare(OWN)
        first = os.fork()
        if first == 0:
            try:
                os.close(LEASE)  # only the watcher outside the sandbox's namespaces holds it
                _first(request, files)
            except BaseException as e:  # a step that fails stops the sandbox, loudly
                _refuse(request, e)
            os._exit(70)
        code = _wait(first)
    finally:
        os._exit(code)


def _answer(conn: socket.socket, files: ModuleFiles) -> None:
    with conn, conn.makefile("rwb") as stream:
        request = json.loads(stream.readline())
        if "hello" in request:  # a host attaching to a shared zygote: is this one alive?
            stream.write(json.dumps({"zygote": os.getpid()}).encode() + b"\n")
            return
        if "kill" in request or "alive" in request:
            pid = int(request.get("kill", request.get("alive")))
            if pid <= 1:  # 0, -1 and the namespace's init would be the zygote or everything
                raise ValueError(f"no such fork: {pid}")
            if "kill" in request:  # its whole group (it calls setsid first), or itself
                for kill in (os.killpg, os.kill):
                    try:
                        kill(pid, signal.SIGKILL)
                    except OSError:
                        continue
            try:
                os.kill(pid, 0)
                alive = True
            except OSError:
                alive = False
            stream.write(json.dumps({"alive": alive}).encode() + b"\n")
            return
        if threading.active_count() != 1:
            raise RuntimeError("the zygote has threads: it must not fork")
        pid = os.fork()
        if pid == 0:
            try:  # whatever happens, this process never returns to the zygote's loop
                stream.flush()
                # Wait until the host has put this process in its cgroup; the line says
                # what the kernel's environment is (what was enforced). No line: no sandbox.
                go = stream.readline()
                if go:
                    request.update(json.loads(go))
                    _child(request, conn.fileno(), files)
            finally:
                os._exit(70)
        stream.write(json.dumps({"pid": pid}).encode() + b"\n")


def _forks_alive() -> bool:
    """Whether any fork still runs: any process of this pid namespace but its init (the
    zygote's bubblewrap) and the zygote (forks are reaped at once: ``SIGCHLD`` ignored)."""
    mine = os.getpid()
    return any(p.isdigit() and int(p) not in (1, mine) for p in os.listdir("/proc"))


def serve(path: str, idle_exit: float | None = None) -> None:
    """Warm up, then answer requests on ``path``: until the host ends this process, or, with
    ``idle_exit``, until that many seconds passed with no request and no fork alive (a
    shared zygote, which no process owns, ends itself so)."""
    _warm()
    files = ModuleFiles()  # docs/benchmarks.md: a fork's kernel walks these, not the modules
    # What the imports made stays in the zygote's pages: a fork's garbage collector would
    # otherwise walk (and so copy) every one of them.
    gc.collect()
    gc.freeze()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(64)
    print("ready", flush=True)
    listener.settimeout(idle_exit)
    while True:
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if _forks_alive():
                continue
            os.unlink(path)  # a host that comes now starts a new zygote
            return
        conn.settimeout(None)
        try:
            _answer(conn, files)
        except (OSError, ValueError, KeyError, RuntimeError) as e:
            print(f"codeagent zygote: bad request: {e}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> None:
    """``python -m codeagent_jupyter.sandbox.zygote SOCKET`` (inside its bubblewrap)."""
    parser = argparse.ArgumentParser(description="Fork confined kernels on request.")
    parser.add_argument("socket")
    parser.add_argument("--idle-exit", type=float, default=None, help="seconds (shared)")
    args = parser.parse_args(argv)
    serve(args.socket, args.idle_exit)


if __name__ == "__main__":
    main()
