"""Where sandbox kernels run: the sandbox backend port.

``create(workdir, limits, owner)`` returns an unstarted sandbox with the ``Sandbox``
contract (``start``/``execute``/``run_command``/``interrupt``/``restart``/``shutdown``/
``is_alive``/``enforcement``). ``LocalBackend`` starts kernels as children of this process
(the default, unchanged); ``GatewayBackend`` starts them on a Jupyter Kernel Gateway or
Enterprise Gateway, for when one machine is not enough.

The server's settings ``c.CodeAgent.sandbox_backend``/``gateway_url``/``gateway_token`` take
their help texts from here (``SETTINGS_HELP``). The CLI has no backend flag: its
``--gateway-url`` chooses the gateway backend, and the token comes from
``$CODEAGENT_GATEWAY_TOKEN`` (``TOKEN_ENV``), as the server's does when none is set.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..config import SandboxLimits
from ..errors import ConfigError

if TYPE_CHECKING:
    from .zygote_host import Zygote

BACKENDS = ("local", "gateway")
TOKEN_ENV = "CODEAGENT_GATEWAY_TOKEN"
"""Environment variable holding the gateway token (kept off command lines)."""
SETTINGS_HELP = {
    "sandbox_backend": 'Where sandbox kernels run: "local" (children of this process) or '
    '"gateway" (a Jupyter Kernel Gateway / Enterprise Gateway at gateway_url).',
    "gateway_url": "Base URL of the kernel gateway (http://host:8888) for the gateway backend.",
    "gateway_token": f"Token sent to the gateway as 'Authorization: token …'; falls back to "
    f"${TOKEN_ENV}. Never sent to any client or recording.",
}


class SandboxBackend(Protocol):
    """Makes sandboxes; a backend holds no kernels itself."""

    name: str

    def create(
        self, workdir: str | os.PathLike[str], limits: SandboxLimits, owner: str | None = None
    ) -> Any:
        """An unstarted sandbox for ``owner`` working in ``workdir`` under ``limits``."""
        ...

    def describe(self) -> dict[str, Any]:
        """What health shows about the backend (never a secret)."""
        ...


class LocalBackend:
    """Kernels started here, by jupyter_client (``Sandbox``), or forked by a zygote."""

    name = "local"

    def __init__(
        self, zygote: Zygote | None = None, cold_fallback: bool = False, **sandbox_options: Any
    ) -> None:
        self.options = sandbox_options
        """``Sandbox`` keyword options (``allow_unconfined``, ``kernel_manager_class`` …)."""
        self.zygote = zygote
        """Forks every sandbox it can serve (a workspace below its folder, no network);
        the others start cold, and each one's enforcement says which start it had."""
        self.cold_fallback = cold_fallback
        """A fork that cannot be made (the zygote cannot run here now) starts cold instead
        (``start = "auto"``); else the sandbox's start fails."""
        self._forked: type | None = None

    def create(
        self, workdir: str | os.PathLike[str], limits: SandboxLimits, owner: str | None = None
    ) -> Any:
        from .kernel import Sandbox

        options = dict(self.options)
        if self.zygote is not None and self._serves(Path(workdir), limits):
            if self._forked is None:
                from .zygote_manager import manager_class

                self._forked = manager_class(self.zygote, self.cold_fallback)
            options["kernel_manager_class"] = self._forked
        return Sandbox(workdir=workdir, limits=limits, **options)

    def _serves(self, workdir: Path, limits: SandboxLimits) -> bool:
        from .zygote_manager import unserved

        assert self.zygote is not None
        inside = workdir.resolve().is_relative_to(self.zygote.workspaces)
        return inside and unserved(limits) is None

    def describe(self) -> dict[str, Any]:
        manager = self.options.get("kernel_manager_class")
        info: dict[str, Any] = {"name": self.name, "gateway_url": None}
        if manager is not None:
            info["kernel_manager_class"] = f"{manager.__module__}.{manager.__qualname__}"
        info["start"] = "cold" if self.zygote is None else "zygote"
        return info

    def close(self) -> None:
        """End the zygote, if there is one, and every sandbox it forked."""
        if self.zygote is not None:
            self.zygote.close()


class GatewayBackend:
    """Kernels started on a kernel gateway (``GatewaySandbox``), under its ceiling.

    The workspace path is sent as-is: the gateway host must see the same directory at the
    same path (a shared volume), which is also how the server's file tools see what the
    kernel sees; the launcher there refuses a workspace outside its allowed root.
    """

    name = "gateway"

    def __init__(
        self, url: str, token: str = "", *, kernel_name: str = "codeagent-sandbox", **options: Any
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"gateway URL must start with http:// or https://, not {url!r}")
        self.url = url.rstrip("/")
        self.token = token
        self.kernel_name = kernel_name
        self.options = {
            k: v for k, v in options.items() if k in ("startup_timeout", "interrupt_grace")
        }

    def create(
        self, workdir: str | os.PathLike[str], limits: SandboxLimits, owner: str | None = None
    ) -> Any:
        from .gateway import GatewaySandbox

        return GatewaySandbox(
            Path(workdir),
            limits,
            url=self.url,
            token=self.token,
            owner=owner,
            kernel_name=self.kernel_name,
            **self.options,
        )

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "gateway_url": self.url, "token": bool(self.token)}


def make_backend(
    kind: str = "local", gateway_url: str = "", gateway_token: str = "", **sandbox_options: Any
) -> SandboxBackend:
    """The backend an administrator chose; ``ConfigError`` (one line) for a bad choice."""
    if kind == "local":
        return LocalBackend(**sandbox_options)
    if kind != "gateway":
        raise ConfigError(f"sandbox backend must be one of {', '.join(BACKENDS)}, not {kind!r}")
    if not gateway_url:
        raise ConfigError("the gateway sandbox backend needs a gateway URL (gateway_url)")
    token = gateway_token or os.environ.get(TOKEN_ENV, "")
    return GatewayBackend(gateway_url, token, **sandbox_options)
