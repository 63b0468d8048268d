"""Kernel provisioner for the ``codeagent-sandbox`` kernel spec.

It is a LocalProvisioner with three changes that only the server side can make:

- the environment is reduced to an allow-list *before* the process exists, so not even
  the launcher's ``/proc/<pid>/environ`` holds the server's secrets;
- the connection file and ``ipc`` sockets go to a private directory outside the Jupyter
  runtime directory (which the sandbox cannot see), because ``tcp`` cannot cross a
  network namespace;
- the kernel's ``pids`` cgroup and private directory are removed when it is gone.

Everything else (limits, namespaces) is done by the launcher, so a remote provisioner or
a gateway that runs the same kernel spec gets the same behaviour.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from jupyter_client.provisioning import LocalProvisioner

from . import cgroup
from .isolation import scrub_env
from .launcher import PRIVATE_DIR_PREFIX


class SandboxProvisioner(LocalProvisioner):  # type: ignore[misc]
    """Launches the sandbox launcher with a scrubbed env and private ipc sockets."""

    _private_dir: Path | None = None

    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        km = self.parent
        if km is not None:
            if self._private_dir is None:
                self._private_dir = Path(tempfile.mkdtemp(prefix=PRIVATE_DIR_PREFIX))
            km.transport = "ipc"
            km.ip = str(self._private_dir / "kernel-ipc")
            km.connection_file = str(self._private_dir / f"kernel-{self.kernel_id}.json")
        return await super().pre_launch(**kwargs)

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
