"""``Sandbox``: one limited ipykernel, driven through jupyter_client.

What callers can rely on: ``execute`` never raises for the code's own failures; a cell
that runs past ``cell_timeout`` is interrupted (state kept) and, if it does not stop
within a grace period, the kernel is restarted (state lost); a kernel that dies is
noticed within a fraction of a second, restarted, and the result says so. Outputs
produced before any of that are kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import queue
import subprocess
import time
from pathlib import Path
from typing import Any

import zmq
from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import NoSuchKernel

from ..config import SandboxLimits
from ..core.netlog import NetworkLog
from ..core.ports import ExecResult, OutputCallback
from ..egress.bodies import BodyStore
from ..egress.broker import OnRequest
from ..egress.policy import Approver, EgressPolicy
from ..egress.replay import Recording
from ..errors import ConfigError, IsolationUnavailable, SandboxError
from .cells import CellRunner
from .disk import DiskWatch
from .egress_link import EgressLink
from .guarded import GuardedKernel
from .isolation import (
    ALLOW_UNCONFINED_ENV,
    EGRESS_ENV,
    LIMITS_ENV,
    NO_ISOLATION,
    REFUSED_FILE,
    WORKDIR_ENV,
    scrub_env,
)
from .ladder import Ladder, cell_result
from .messages import (
    describe_exit,
    drain,
    read_enforcement,
    reply_status,
    shell_reply,
    wait_ready,
)
from .outputs import OutputCollector
from .overlay import PACKAGES_DIR
from .paths import PRIVATE_DIR_PREFIX, workspace_problem
from .report import is_unconfined

log = logging.getLogger(__name__)
_POLL_S = 0.2

__all__ = ["Sandbox", "describe_exit"]


class Sandbox(GuardedKernel, CellRunner):
    """A stateful sandbox kernel; see ``codeagent_jupyter.core.ports.SandboxPort``."""

    def __init__(
        self,
        workdir: str | os.PathLike[str] = ".",
        limits: SandboxLimits | None = None,
        *,
        kernel_name: str = "codeagent-sandbox",
        kernel_manager_class: type = AsyncKernelManager,
        startup_timeout: float = 60.0,
        interrupt_grace: float = 3.0,
        allow_unconfined: bool = False,
        egress: EgressPolicy | None = None,
        on_egress: OnRequest | None = None,
        approve_egress: Approver | None = None,
        egress_bodies: BodyStore | None = None,
        egress_replay: Recording | None = None,
    ) -> None:
        self.workdir = Path(workdir).resolve()
        if not self.workdir.is_dir():
            raise ConfigError(f"sandbox workdir is not a directory: {workdir}")
        problem = workspace_problem(self.workdir)
        if problem:
            raise ConfigError(problem)
        self.limits = limits or SandboxLimits()
        self.kernel_name = kernel_name
        self.kernel_manager_class = kernel_manager_class
        self.startup_timeout = startup_timeout
        self.interrupt_grace = interrupt_grace
        self.allow_unconfined = allow_unconfined
        """Start even where pid/filesystem isolation is missing (an explicit, loud choice)."""
        self.egress: EgressLink | None = None
        """The broker of ``--network policy`` (``limits.egress_broker``): ``egress`` is its
        policy (default: nothing allowed, unlisted hosts asked of ``approve_egress``), and
        ``on_egress`` receives each request it saw, allowed or denied; ``egress_bodies`` is
        the content store of fetched bodies, ``egress_replay`` a recording it answers from."""
        self.network_log = NetworkLog() if on_egress is None else None
        """Where the broker's records go when no ``on_egress`` was given (a pooled sandbox
        made before its session): the session ``attach``es its bus to it."""
        if self.limits.egress_broker and not self.limits.network:
            report = on_egress if on_egress is not None else self.network_log
            self.egress = EgressLink(
                egress or EgressPolicy(), report, approve_egress, egress_bodies, egress_replay
            )
        self.enforcement: dict[str, Any] = {}
        self.launched = asyncio.Event()
        """Set once the kernel's process is launched (before it answers): what waits only
        for the launch, not the start (``StartingSandbox.launched``)."""
        self._km: Any = None
        self._kc: Any = None
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> Sandbox:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    async def start(self) -> None:
        """Launch the kernel and wait until it answers; raises ``SandboxError`` if it cannot.

        A manager that says ``cold_fallback`` (a zygote's, for ``--start auto``) is replaced
        by the cold start when it cannot start the kernel (its zygote cannot run here now):
        the enforcement line then says no ``start: zygote``."""
        if self._km is not None:
            return
        try:
            await self._launch(self.kernel_manager_class)
        except SandboxError as e:
            if self.egress is not None or not getattr(
                self.kernel_manager_class, "cold_fallback", False
            ):
                raise
            log.warning("no zygote's fork for this sandbox (%s): starting it cold", e)
            await self._launch(AsyncKernelManager)
        self.launched.set()
        try:
            await self._connect()
        except BaseException:
            await self.shutdown()
            raise
        self._start_guard()

    async def _launch(self, manager_class: type) -> None:
        """Start the kernel's process through a ``manager_class``; it becomes ``_km``."""
        km = manager_class(kernel_name=self.kernel_name)
        try:
            spec = km.kernel_spec
        except NoSuchKernel as e:
            raise SandboxError(
                f"kernel spec {self.kernel_name!r} not found; is codeagent-jupyter installed?"
            ) from e
        except Exception:  # e.g. a gateway manager that resolves specs remotely
            spec = None
        if spec is not None and hasattr(spec, "interrupt_mode"):
            # A SIGINT to bubblewrap's process group would kill bubblewrap itself;
            # ipykernel's interrupt_request signals only the kernel inside.
            spec.interrupt_mode = "message"
        env = scrub_env(os.environ)
        env[LIMITS_ENV] = json.dumps(self.limits.to_dict())
        env[WORKDIR_ENV] = str(self.workdir)
        env.pop(ALLOW_UNCONFINED_ENV, None)
        env.pop(EGRESS_ENV, None)
        if self.egress is not None:
            env[EGRESS_ENV] = str(await self.egress.start())
        if self.allow_unconfined:
            env[ALLOW_UNCONFINED_ENV] = "1"
        try:
            await km.start_kernel(env=env, cwd=str(self.workdir), stdout=subprocess.DEVNULL)
        except Exception as e:
            await self._close_egress()
            raise SandboxError(f"sandbox kernel failed to start: {e}") from e
        self._km = km

    async def _connect(self) -> None:
        kc = self._km.client()
        # A kernel binds its sockets a few hundred ms after its start: the client's first
        # connects fail, and ZeroMQ tries again after 100 ms unless told sooner (backing off).
        kc.context.setsockopt(zmq.RECONNECT_IVL, 10)
        kc.context.setsockopt(zmq.RECONNECT_IVL_MAX, 1000)
        kc.start_channels()
        try:
            await wait_ready(kc, self.startup_timeout, self._km.is_alive)
        except (RuntimeError, TimeoutError) as e:
            kc.stop_channels()
            refused = self._refusal()
            if refused and NO_ISOLATION in refused:
                raise IsolationUnavailable(refused) from None
            if refused:
                raise SandboxError(refused) from None
            raise SandboxError(f"sandbox kernel did not become ready: {e}") from e
        self._kc = kc
        self.enforcement = await read_enforcement(kc, self.startup_timeout)
        if is_unconfined(self.enforcement) and not self.allow_unconfined:
            # Our launcher refuses this itself; a kernel that does not even report (another
            # kernel spec, or a manager that ignored ours) must not run model code either.
            raise SandboxError(
                f"kernel {self.kernel_name!r} reports no pid or filesystem isolation (not the "
                "codeagent sandbox, or one that cannot isolate here); refusing to run it"
            )

    def _refusal(self) -> str | None:
        """The launcher's one-line reason, when it refused to start the kernel."""
        connection_file = getattr(self._km, "connection_file", None)
        if not connection_file:
            return None
        try:
            text = (Path(connection_file).parent / REFUSED_FILE).read_text()
        except OSError:
            return None
        return " ".join(text.split())[:2000] or None

    @property
    def private_dir(self) -> Path | None:
        """This kernel's own directory (connection file, ipc sockets), where our provisioner
        made it: created for this kernel alone (0700, outside every workspace) and, under
        bubblewrap, bound into this sandbox and no other. A file meant for this sandbox only
        (a ``--with`` upload) is handed over there. None for other kernel managers."""
        connection_file = getattr(self._km, "connection_file", None)
        if not connection_file or getattr(self._km, "transport", "") != "ipc":
            return None
        parent = Path(connection_file).parent
        return parent if parent.name.startswith(PRIVATE_DIR_PREFIX) else None

    @property
    def packages_dir(self) -> Path | None:
        """Where wheels installed for this sandbox go (``sandbox.overlay``): on its
        ``sys.path``, read-only inside it. None where there is no private directory."""
        private = self.private_dir
        return private / PACKAGES_DIR if private is not None else None

    @property
    def kernel_id(self) -> str | None:
        """The jupyter_client kernel id (stable across restarts), once started."""
        return self._km.kernel_id if self._km is not None else None

    def is_alive(self) -> bool:
        """Whether the kernel process is running (True for remote kernels once started)."""
        if self._km is None:
            return False
        process = getattr(getattr(self._km, "provisioner", None), "process", None)
        return process is None or process.poll() is None

    async def interrupt(self) -> None:
        """Interrupt the running cell, if any; the kernel and its state survive."""
        if self._km is not None:
            await self._km.interrupt_kernel()

    async def shutdown(self) -> None:
        """Stop the kernel and remove everything it left (sockets, cgroup, temp dirs)."""
        self._stop_guard()
        if self._kc is not None:
            self._kc.stop_channels()
            self._kc = None
        if self._km is not None:
            km, self._km = self._km, None
            with contextlib.suppress(Exception):  # already gone: nothing left to stop
                await km.shutdown_kernel(now=True)
        await self._close_egress()

    async def _close_egress(self) -> None:
        if self.egress is not None:
            await self.egress.close()

    async def restart(self) -> None:
        """Start a fresh kernel in place of the current one (all state is lost)."""
        if self._kc is not None:
            self._kc.stop_channels()
            self._kc = None
        await self._km.restart_kernel(now=True)
        await self._connect()
        self._start_guard()

    async def _abandon(self) -> None:
        """The caller gave up on a cell (task cancelled): stop it so the next one can run."""
        with contextlib.suppress(Exception):
            await self.interrupt()

    async def _run(
        self,
        code: str,
        on_output: OutputCallback | None,
        store_history: bool,
        user_expressions: dict[str, str],
        timeout: float | None = None,
        watch: DiskWatch | None = None,
    ) -> tuple[ExecResult, dict[str, Any]]:
        if self._km is None:
            raise SandboxError("sandbox is not started")
        notes: list[str] = []
        refused = await self.idle_refusal()
        if refused is not None:
            return refused, {}
        if not await self._km.is_alive():
            reason = self.stop_reason(describe_exit(self._returncode(), self.limits), False)
            await self.restart()
            notes.append(f"{reason} while idle; restarted; state lost")
        collector = OutputCollector(self.limits.output_bytes, on_output)
        start = time.monotonic()
        timeout = self.limits.cell_timeout if timeout is None else timeout
        msg_id = self._kc.execute(
            code,
            store_history=store_history,
            allow_stdin=False,
            stop_on_error=False,
            user_expressions=user_expressions,
        )
        try:
            return await self._collect(msg_id, collector, start, timeout, notes, watch)
        except asyncio.CancelledError:
            await self._abandon()
            raise

    async def _collect(
        self,
        msg_id: str,
        collector: OutputCollector,
        start: float,
        timeout: float,
        notes: list[str],
        watch: DiskWatch | None = None,
    ) -> tuple[ExecResult, dict[str, Any]]:
        """Read the cell's messages until idle, climbing the timeout ladder (``ladder``:
        interrupt, then restart after ``interrupt_grace``) and checking the kernel is alive
        every ``_POLL_S`` seconds."""
        ladder = Ladder(start, timeout, self.interrupt_grace, watch)
        status, count, end = "", None, 0.0
        next_check = start + _POLL_S
        while True:
            now = time.monotonic()
            if await ladder.climb(now, self.interrupt):
                end = now
                await self.restart()
                status, note = ladder.gave_up("the kernel was restarted")
                notes.append(note)
                break
            wait = max(0.001, min(_POLL_S, ladder.due() - now))
            try:
                msg = await self._kc.get_iopub_msg(timeout=wait)
            except queue.Empty:
                msg = None
            if msg is None or time.monotonic() >= next_check:
                next_check = time.monotonic() + _POLL_S
                if not await self._km.is_alive():
                    exited = describe_exit(self._returncode(), self.limits)
                    reason = self.stop_reason(exited, during_call=True)
                    end = time.monotonic()
                    await drain(self._kc, msg_id, collector)
                    await self.restart()
                    status = "died"
                    notes.append(f"{reason}; restarted; state lost")
                    break
            if msg is None or msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["header"]["msg_type"]
            if kind == "status" and msg["content"]["execution_state"] == "idle":
                break
            if kind == "execute_input":
                count = msg["content"].get("execution_count")
            collector.add(msg)
        exprs: dict[str, Any] = {}
        if not status:
            reply = await shell_reply(self._kc, msg_id, self.interrupt_grace + 2)
            content = reply["content"] if reply else {}
            count = content.get("execution_count", count)
            exprs = content.get("user_expressions") or {}
            status, note = reply_status(content, ladder.interrupted_after, self.limits)
            notes.extend([note] if note else [])
        return cell_result(status, collector, start, count, notes, end), exprs

    def _returncode(self) -> int | None:
        process = getattr(getattr(self._km, "provisioner", None), "process", None)
        return process.poll() if process is not None else None
