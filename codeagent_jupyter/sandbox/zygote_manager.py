"""A kernel manager whose kernels are forks of a zygote, for ``Sandbox(kernel_manager_class=)``.

``Sandbox`` drives a kernel through the few methods of jupyter_client's manager it uses
(start, client, interrupt, restart, shutdown, is_alive); this class provides them over a
``Zygote``. ``manager_class(zygote)`` binds one zygote to the class ``Sandbox`` instantiates.
A request the zygote cannot serve (the egress broker of ``--network policy``) is refused
here, so the caller falls back to the cold start rather than running with less.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import shutil
import signal
import socket
import time
import uuid
from pathlib import Path
from typing import Any

from jupyter_client import AsyncKernelClient

from ..config import SandboxLimits
from . import cgroup
from .isolation import EGRESS_ENV, LIMITS_ENV
from .stop import started_at
from .zygote_host import Zygote

STOP_WAIT_S = 30.0
"""Longest wait, after ``stop_now``'s signal, for the fork to be gone (as ``guarded``)."""
INTERRUPT_REPLY_S = 5.0
"""Longest wait for the kernel's reply to an interrupt request (it answers at once)."""


def unserved(limits: SandboxLimits) -> str | None:
    """Why a zygote's fork cannot be this sandbox (None: it can). A fork always takes its
    own empty network namespace, and the egress broker is the cold launcher's."""
    if limits.network:
        return "a zygote's fork cannot have the host's network (a cold start can)"
    if limits.egress_broker:
        return NO_BROKER
    return None


NO_BROKER = "a zygote's fork has no egress broker (a cold start has)"


class ZygoteKernelManager:
    """Just what ``Sandbox`` calls on a kernel manager, for one forked kernel at a time."""

    zygote: Zygote
    transport = "ipc"
    cold_fallback = False
    """Whether ``Sandbox`` starts the kernel cold when this manager cannot (``--start
    auto``: a zygote that cannot run here now); else the start fails."""

    def __init__(self, kernel_name: str = "codeagent-sandbox") -> None:
        self.kernel_name = kernel_name
        self.kernel_id = str(uuid.uuid4())
        self.connection_file = ""
        self.pid: int | None = None
        self._lease: socket.socket | None = None
        """The fork's lease (``Zygote.spawn``): open while the kernel may live."""
        self._group: tuple[int, str] | None = None
        """The fork's process group on the host (its pgid and its leader's start time)."""
        self._workspace: Path | None = None
        self._limits = SandboxLimits()
        self._args: list[str] = []

    @property
    def kernel_spec(self) -> None:
        """No spec: the zygote is the kernel's launcher (interrupts go as messages)."""
        return None

    async def start_kernel(self, env: dict[str, str], cwd: str, **_: Any) -> None:
        """Fork a kernel for ``cwd`` with the limits the ``Sandbox`` put in ``env``."""
        self._workspace = Path(cwd)
        self._limits = SandboxLimits.from_dict(json.loads(env[LIMITS_ENV]))
        refused = NO_BROKER if env.get(EGRESS_ENV) else unserved(self._limits)
        if refused:
            raise RuntimeError(refused)
        await asyncio.to_thread(self.zygote.ensure_started)
        self._spawn()

    def _spawn(self) -> None:
        assert self._workspace is not None
        connection_file, self.pid, self._lease = self.zygote.spawn(
            self._workspace, self._limits, self._args, self.kernel_id
        )
        self.connection_file = str(connection_file)
        host = self.zygote.host_pid(self.pid)  # the fork called setsid: it leads its group
        started = started_at(host) if host is not None else None
        self._group = (host, started) if host is not None and started is not None else None

    def stop_now(self) -> None:
        """SIGKILL every process of this sandbox from the host, at once (the disk guard's
        thread calls it): the fork's process group holds the first process of its pid
        namespace, whose death ends the rest, detached writers included. Where no cgroup
        can be made (an unprivileged user) nothing else reaches a fork."""
        if self._group is None:
            return
        pgid, started = self._group
        if started_at(pgid) != started:  # gone already, and the number may be another's
            return
        with contextlib.suppress(OSError):
            os.killpg(pgid, signal.SIGKILL)
        deadline = time.monotonic() + STOP_WAIT_S
        while started_at(pgid) == started and time.monotonic() < deadline:
            time.sleep(0.01)  # gone before the next call asks whether the kernel is alive

    def client(self) -> AsyncKernelClient:
        """A client on this kernel's connection file."""
        kc = AsyncKernelClient()
        kc.load_connection_file(self.connection_file)
        return kc

    async def is_alive(self) -> bool:
        """Whether the forked kernel still runs: its group's leader, the watcher of its pid
        namespace, is there as long as it is (a pid the zygote reuses for another fork, maybe
        another process's, is not it); else asked of the zygote, which sees its pid."""
        if self._group is not None:
            return started_at(self._group[0]) == self._group[1]
        return self.pid is not None and self.zygote.alive(self.pid)

    async def interrupt_kernel(self) -> None:
        """ipykernel's ``interrupt_request`` on the control channel, and its reply awaited
        (at most ``INTERRUPT_REPLY_S``): a channel closed at once dropped the request before
        its connection was made, so a fork's cell ran on, past its timeout, and its kernel
        was restarted with its state lost."""
        kc = self.client()
        kc.start_channels(shell=False, iopub=False, stdin=False, hb=False, control=True)
        try:
            kc.control_channel.send(kc.session.msg("interrupt_request", content={}))
            with contextlib.suppress(queue.Empty):  # no reply: the caller's grace decides
                await kc.control_channel.get_msg(timeout=INTERRUPT_REPLY_S)
        finally:
            kc.stop_channels()

    async def shutdown_kernel(self, now: bool = False, restart: bool = False) -> None:
        """End the kernel; the zygote serves on (its owner ends it: the server, a test, or
        itself when idle, a shared one)."""
        self._stop()

    def _stop(self) -> None:
        """End the kernel's pid namespace, its cgroup and its kernel folder."""
        if self._group is not None:
            self.stop_now()  # by the group and its start time: never another fork
        elif self.pid is not None:
            self.zygote.kill(self.pid)
        self._group, self.pid = None, None
        if self._lease is not None:
            self._lease.close()
            self._lease = None
        cgroup.remove(self.kernel_id)
        if self.connection_file:
            shutil.rmtree(Path(self.connection_file).parent, ignore_errors=True)
            self.connection_file = ""

    async def restart_kernel(self, now: bool = False, **_: Any) -> None:
        """A fresh fork in place of this one (all state is lost)."""
        self._stop()
        await asyncio.to_thread(self.zygote.ensure_started)  # a zygote that died: a new one
        self._spawn()


def manager_class(zygote: Zygote, cold_fallback: bool = False) -> type[ZygoteKernelManager]:
    """``ZygoteKernelManager`` bound to ``zygote``, for ``Sandbox(kernel_manager_class=)``."""
    attributes = {"zygote": zygote, "cold_fallback": cold_fallback}
    return type("BoundZygoteKernelManager", (ZygoteKernelManager,), attributes)


def shared_manager_class(workspace: Path, cold_fallback: bool = False) -> type[ZygoteKernelManager]:
    """A manager forking from this user's shared zygote for ``workspace`` (the CLI's
    ``--start zygote``: ``zygote_shared``), attached or started with the kernel, left
    running after it for the next process. The zygote serves ``$CODEAGENT_ZYGOTE_ROOT``
    where that folder holds ``workspace`` (one zygote for many projects), else
    ``workspace`` alone."""
    from .zygote_shared import SharedZygote, served_root

    attributes = {"zygote": SharedZygote(served_root(workspace)), "cold_fallback": cold_fallback}
    return type("SharedZygoteKernelManager", (ZygoteKernelManager,), attributes)
