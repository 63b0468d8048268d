"""A kernel manager class for ``c.CodeAgent.kernel_manager_class``: jupyter_client's own,
counting the kernels it starts, so a test can see the server used the configured class."""

from __future__ import annotations

from typing import Any

from jupyter_client.manager import AsyncKernelManager


class CountingKernelManager(AsyncKernelManager):
    started: list[str] = []

    async def start_kernel(self, **kw: Any) -> None:
        await super().start_kernel(**kw)
        CountingKernelManager.started.append(self.kernel_name)
