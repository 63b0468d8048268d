"""Kernel provisioner for the ``codeagent-sandbox`` kernel spec.

It is a LocalProvisioner with three changes that only the server side can make:

- the environment is reduced to an allow-list *before* the process exists, so not even
  the launcher's ``/proc/<pid>/environ`` holds the server's secrets;
- the connection file and ``ipc`` sockets go to a private directory outside the Jupyter
  runtime directory (which the sandbox cannot see), because ``tcp`` cannot cross a
  network namespace;
- the kernel gets no stdin and no terminal: stdout is discarded and stderr is read
  through a pipe into the server's log, escaped line by line, so a cell cannot write
  escape sequences to the terminal the server runs in;
- the kernel's ``pids`` cgroup and private directory are removed when it is gone, and
  private directories left by a killed server are removed when the next one is made;
- when the launcher refuses to start (its reason in the private directory), a Jupyter
  server's kernel model says so at once: ``execution_state`` ``dead`` and the launcher's line
  as ``reason``, so a gateway's client learns why now, not after the restarter gives up.

Everything else (limits, namespaces) is done by the launcher, so a remote provisioner or
a gateway that runs the same kernel spec gets the same behaviour.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO, Any

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import LocalProvisioner

from . import cgroup, leftovers
from .isolation import REFUSED_FILE, scrub_env
from .paths import PRIVATE_DIR_PREFIX


class SandboxProvisioner(LocalProvisioner):  # type: ignore[misc]
    """Launches the sandbox launcher with a scrubbed env and private ipc sockets."""

    _private_dir: Path | None = None

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        km = self.parent
        if km is not None:
            if self._private_dir is None:
                self._private_dir = Path(
                    tempfile.mkdtemp(prefix=PRIVATE_DIR_PREFIX, dir=_short_tmp())
                )
                leftovers.mark_owner(self._private_dir)
                leftovers.sweep(self._private_dir.parent, PRIVATE_DIR_PREFIX)
            km.transport = "ipc"
            km.ip = str(self._private_dir / "kernel-ipc")
            km.connection_file = str(self._private_dir / f"kernel-{self.kernel_id}.json")
            (self._private_dir / REFUSED_FILE).unlink(missing_ok=True)  # a restart's own
        return await super().pre_launch(**kwargs)

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        kwargs.update(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        info = await super().launch_kernel(cmd, **kwargs)
        process = self.process
        if process is not None and process.stderr is not None:
            # Take the pipe from the Popen object: jupyter_client closes its streams when
            # the process is reaped, while the reader may still be draining it.
            stream = os.fdopen(os.dup(process.stderr.fileno()), "rb")
            process.stderr.close()
            process.stderr = None
            log = getattr(self, "log", None) or logging.getLogger(__name__)
            name = f"kernel {str(self.kernel_id)[:8]}"
            aio = asyncio.get_running_loop()

            def ended() -> None:  # in the reader thread: the launcher and all it ran are gone
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    aio.call_soon_threadsafe(self._say_refused)

            threading.Thread(
                target=forward_stderr, args=(stream, log, name, ended), daemon=True
            ).start()
        return info

    def _say_refused(self) -> None:
        """Mark a server's kernel model dead with the launcher's refusal, if it refused.

        Only where the kernel manager has the ``reason`` of jupyter_server's
        ``ServerKernelManager`` (a Jupyter server or kernel gateway), so locally nothing
        changes: ``Sandbox`` reads the same file itself.
        """
        km, private = self.parent, self._private_dir
        if km is None or private is None or not hasattr(km, "reason"):
            return
        try:
            reason = (private / REFUSED_FILE).read_text(errors="replace")
        except OSError:
            return
        km.reason = " ".join(reason.split())[:500]
        km.execution_state = "dead"

    def _finalize_env(self, env: dict[str, str]) -> None:
        super()._finalize_env(env)
        kept = scrub_env(env)
        env.clear()
        env.update(kept)

    async def cleanup(self, restart: bool = False) -> None:
        await super().cleanup(restart=restart)
        # A pool of our own, not the loop's default executor: a process forked later
        # (multiprocessing notebook runners) would inherit that pool with an idle thread
        # that does not exist in the child, and its next shutdown would wait forever.
        with ThreadPoolExecutor(1, thread_name_prefix="codeagent-cgroup") as pool:
            await asyncio.get_running_loop().run_in_executor(pool, cgroup.remove, self.kernel_id)
        if not restart and self._private_dir is not None:
            shutil.rmtree(self._private_dir, ignore_errors=True)
            self._private_dir = None


IPC_PATH_MAX = 100
"""Longest ipc socket path we create: AF_UNIX addresses hold 107 bytes on Linux, and zmq
appends a channel number to ``kernel-ipc``."""


def _short_tmp() -> str | None:
    """Where the private directory goes: the temp dir, unless its socket paths would be too
    long for AF_UNIX (a deep ``TMPDIR``, e.g. a test's own folder) — then ``/tmp``; a kernel
    that cannot bind its sockets would otherwise fail to start with "File name too long"."""
    base = tempfile.gettempdir()
    longest = len(os.fsencode(base)) + len(f"/{PRIVATE_DIR_PREFIX}xxxxxxxx/kernel-ipc-99")
    if longest <= IPC_PATH_MAX or not os.access("/tmp", os.W_OK | os.X_OK):
        return None
    return "/tmp"


LINE_CHARS = 2000
"""Longest kernel stderr line written to the log; the rest is cut with a marker."""
MAX_LINES = 1000
"""Lines logged per kernel; after that the pipe is drained silently."""


def escape_line(raw: bytes, limit: int = LINE_CHARS) -> str:
    """Printable text only: control characters (ESC, CR, BEL, …) become ``\\xNN`` escapes."""
    text = raw.rstrip(b"\n").decode("utf-8", errors="backslashreplace")
    cut = len(text) > limit
    text = text[:limit]
    out = "".join(
        c if c.isprintable() or c == "\\" else c.encode("unicode_escape").decode("ascii")
        for c in text
    )
    return out + (f" … [{len(raw) - limit} more bytes]" if cut else "")


def forward_stderr(
    stream: IO[bytes],
    log: logging.Logger | Any,
    name: str,
    ended: Callable[[], None] | None = None,
) -> None:
    """Copy a kernel's stderr into ``log``, escaped and bounded, until the pipe closes;
    then call ``ended`` (every process holding the pipe is gone)."""
    lines = 0
    with stream:
        for raw in iter(lambda: stream.readline(64 * 1024), b""):
            lines += 1
            if lines <= MAX_LINES:
                log.info("%s stderr: %s", name, escape_line(raw))
            elif lines == MAX_LINES + 1:
                log.info("%s stderr: more output not logged", name)
    if ended is not None:
        ended()
