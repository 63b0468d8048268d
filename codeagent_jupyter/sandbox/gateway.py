"""``GatewaySandbox``: a sandbox kernel started on a Jupyter kernel gateway.

Same contract as ``Sandbox`` (``execute`` never raises for the code's own failures, nor
for a gateway that went away: that is an ``ExecResult`` with status ``died`` and the note
"gateway unreachable"). The kernel runs the same ``codeagent-sandbox`` launcher on the
gateway host, which applies the limits sent as ``KERNEL_CODEAGENT_*`` variables within the
ceiling the operator set there (``CODEAGENT_SANDBOX_MAX_LIMITS``); ``limits`` and
``enforcement`` are what the launcher reports it applied, not what was asked for. What the
launcher would refuse is refused here first, in one line, and a launch that fails anyway
ends the start at once with the launcher's reason (``gateway_start``).

A cell is complete when both its ``execute_reply`` and its ``status: idle`` have arrived;
a kernel that dies under a cell is reported as ``died`` within about 1.5 s, whatever the
gateway's restarter settings (see ``gateway_watch``), and a fresh kernel replaces it in the
background: the next cell waits for it (see ``gateway_cell``).
Restart is delete-then-start, so a kernel id is not stable across restarts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from pathlib import Path
from typing import Any

from ..config import SandboxLimits
from ..core.ports import ExecResult, OutputCallback
from ..errors import ConfigError, SandboxError
from .cells import CellRunner
from .disk import DiskWatch
from .gateway_ceiling import KERNEL_LIMITS_ENV, KERNEL_WORKDIR_ENV
from .gateway_cell import UNREACHABLE, collect, watching
from .gateway_start import launch_failure, preflight
from .gateway_wire import CLOSED, GatewayError, GatewayWire
from .ladder import cell_result
from .messages import ENFORCED_BY_CLIENT, ENFORCEMENT_EXPR, parse_enforcement
from .outputs import OutputCollector
from .paths import workspace_problem

_ENFORCED_BY_CLIENT = {k: v for k, v in ENFORCED_BY_CLIENT.items() if k != "disk"}


class GatewaySandbox(CellRunner):
    """A stateful sandbox kernel on a gateway; see ``codeagent_jupyter.core.ports.SandboxPort``."""

    def __init__(
        self,
        workdir: str | Path,
        limits: SandboxLimits | None = None,
        *,
        url: str,
        token: str = "",
        owner: str | None = None,
        kernel_name: str = "codeagent-sandbox",
        startup_timeout: float = 60.0,
        interrupt_grace: float = 3.0,
    ) -> None:
        self.workdir = Path(workdir)
        problem = workspace_problem(self.workdir)
        if problem:
            raise ConfigError(problem)
        self.limits = limits or SandboxLimits()
        self.requested_limits = self.limits
        self.owner = owner
        self.kernel_name = kernel_name
        self.startup_timeout = startup_timeout
        self.interrupt_grace = interrupt_grace
        self.enforcement: dict[str, Any] = {}
        self.wire = GatewayWire(url, token)
        self._started = False
        self._closed = True
        """Not started yet, or shut down by its owner: ``execute`` raises, as locally."""
        self._lock = asyncio.Lock()
        self._replacing: asyncio.Future[None] | None = None
        """A fresh kernel starting after a death or a stuck cell (``replace_soon``)."""

    async def __aenter__(self) -> GatewaySandbox:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()

    @property
    def kernel_id(self) -> str | None:
        """The gateway's id of the current kernel (a restart gives a new one)."""
        return self.wire.kernel_id

    def _env(self) -> dict[str, str]:
        env = {
            KERNEL_LIMITS_ENV: json.dumps(self.requested_limits.to_dict()),
            KERNEL_WORKDIR_ENV: str(self.workdir),
        }
        if self.owner:
            env["KERNEL_USERNAME"] = self.owner
        return env

    async def start(self) -> None:
        """Start a kernel on the gateway and wait until it answers; ``SandboxError`` if not."""
        if self._started:
            return
        self._closed = False
        await preflight(self.wire, self.kernel_name, self.requested_limits, self.workdir)
        try:
            await self.wire.start_kernel(self.kernel_name, self._env())
            await self._connect()
        except BaseException as e:
            await self.wire.delete_kernel()
            if isinstance(e, GatewayError):
                raise SandboxError(f"sandbox kernel failed to start: {e}") from None
            raise
        self._started = True

    async def _connect(self) -> None:
        not_ready = SandboxError(
            "sandbox kernel on the gateway did not become ready (its launcher may have "
            "refused the limits or workspace; the gateway's log has the reason)"
        )
        deadline = time.monotonic() + self.startup_timeout
        # The gateway answers the socket once the kernel has answered it; meanwhile the
        # kernel's model says at once when its launcher refused (see gateway_start).
        connecting = asyncio.ensure_future(self.wire.connect(timeout=self.startup_timeout))
        failing = asyncio.ensure_future(launch_failure(self.wire, str(self.wire.kernel_id)))
        try:
            await asyncio.wait({connecting, failing}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled: no socket may open later for a deleted kernel
            connecting.cancel()
            raise
        finally:
            failing.cancel()
        if not connecting.done():  # the launch failed first
            connecting.cancel()
            with contextlib.suppress(BaseException):
                await connecting
            raise SandboxError(f"gateway {self.wire.url}: {failing.result()}")
        if connecting.exception() is not None:
            raise not_ready from None
        while not await self.wire.kernel_info(timeout=1.0):
            if self.wire.kernel_gone.is_set() or time.monotonic() > deadline:
                raise not_ready
            if not self.wire.connected:
                await self.wire.connect()
        self.enforcement = await self._read_enforcement()

    async def _read_enforcement(self) -> dict[str, Any]:
        content = {
            "code": "",
            "silent": True,
            "store_history": False,
            "user_expressions": {"e": ENFORCEMENT_EXPR},
            "allow_stdin": False,
        }
        queue = self.wire.send("shell", "execute_request", content)
        reply: dict[str, Any] | None = None
        try:
            while True:
                msg = await asyncio.wait_for(queue.get(), self.startup_timeout)
                if msg is CLOSED or msg.get("gone"):
                    break
                if msg["header"]["msg_type"] == "execute_reply":
                    reply = msg["content"]
                    break
        except (asyncio.TimeoutError, KeyError, TypeError):
            reply = None
        finally:
            self.wire.forget(queue)
        found = parse_enforcement(reply)
        applied = found.get("limits")
        if isinstance(applied, dict):
            with contextlib.suppress(ValueError, TypeError):
                self.limits = SandboxLimits.from_dict(applied)
        found["backend"] = f"gateway {self.wire.url}"
        return {**found, **_ENFORCED_BY_CLIENT}

    def is_alive(self) -> bool:
        """Started, its socket open, and not announced dead by the gateway."""
        return self._started and self.wire.connected and not self.wire.kernel_gone.is_set()

    async def ping(self, timeout: float = 3.0) -> bool:
        """Liveness the way the pool needs it: the kernel answers a ``kernel_info`` request."""
        return self.is_alive() and await self.wire.kernel_info(timeout)

    async def interrupt(self) -> None:
        """Interrupt the running cell (the gateway sends the kernel an interrupt_request)."""
        if self.wire.kernel_id:
            with contextlib.suppress(GatewayError):
                await self.wire.rest("POST", f"/api/kernels/{self.wire.kernel_id}/interrupt")

    async def shutdown(self) -> None:
        """Delete the kernel on the gateway (a gateway already gone is no error)."""
        await self._replaced()  # then its kernel is known, and deleted below
        self._started, self._closed = False, True
        await self.wire.delete_kernel()

    async def restart(self) -> None:
        """Replace the kernel with a fresh one (all state is lost; a new kernel id)."""
        await self._replaced()
        await self.wire.delete_kernel()
        self._started = False
        await self.start()

    def replace_soon(self) -> None:
        """Replace the kernel in the background, so that a ``died`` result is returned at
        once instead of after a kernel start; the next cell (or ``restart``/``shutdown``)
        waits for it."""
        if self._replacing is None:
            self._started = False
            self._replacing = asyncio.ensure_future(self._replace())

    async def _replace(self) -> None:
        await self.wire.delete_kernel()
        await self.start()

    async def _replaced(self) -> None:
        """Wait for a background replacement; if it failed, the next cell starts again."""
        task, self._replacing = self._replacing, None
        if task is not None:
            with contextlib.suppress(GatewayError, SandboxError):
                await task

    async def _revive(self, notes: list[str]) -> bool:
        """Before a cell: reconnect a dropped socket, or replace a dead kernel."""
        if self._closed:
            raise SandboxError("sandbox is not started")
        await self._replaced()
        if self._started and self.wire.connected and not self.wire.kernel_gone.is_set():
            return True
        try:
            if not self._started:  # an earlier replacement failed: try again now
                await self.start()
                notes.append("a new kernel was started; state lost")
            elif self.wire.kernel_gone.is_set():
                await self.restart()
                notes.append("kernel died while idle; restarted; state lost")
            else:
                await self.wire.connect()
        except (GatewayError, SandboxError) as e:
            notes.append(f"{UNREACHABLE}: {e}")
            return False
        return True

    async def _run(
        self,
        code: str,
        on_output: OutputCallback | None,
        store_history: bool,
        user_expressions: dict[str, str],
        timeout: float | None = None,
        watch: DiskWatch | None = None,
    ) -> tuple[ExecResult, dict[str, Any]]:
        notes: list[str] = []
        collector = OutputCollector(self.limits.output_bytes, on_output)
        revived = await self._revive(notes)
        start = time.monotonic()  # a replacement kernel's start is not the cell's time
        if not revived:
            return cell_result("died", collector, start, None, notes), {}
        content = {
            "code": code,
            "silent": False,
            "store_history": store_history,
            "user_expressions": user_expressions,
            "allow_stdin": False,
            "stop_on_error": False,
        }
        try:
            queue = self.wire.send("shell", "execute_request", content)
        except GatewayError as e:
            return cell_result("died", collector, start, None, [f"{UNREACHABLE}: {e}"]), {}
        try:
            async with watching(self, queue):
                return await collect(self, queue, collector, start, timeout, notes, watch)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await self.interrupt()
            raise
        finally:
            self.wire.forget(queue)
