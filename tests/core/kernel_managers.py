"""A kernel manager class for ``Sandbox(kernel_manager_class=…)``: jupyter_client's own,
whose kernel starts only once a gate opens, so a test decides when the sandbox is ready."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from jupyter_client.manager import AsyncKernelManager


class GatedKernelManager(AsyncKernelManager):
    gate = threading.Event()
    opened_in_time: bool | None = None
    """Whether the gate opened before the start gave up waiting (60 s)."""

    async def start_kernel(self, **kw: Any) -> None:
        GatedKernelManager.opened_in_time = await asyncio.to_thread(self.gate.wait, 60)
        await super().start_kernel(**kw)
