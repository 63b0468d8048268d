"""The ``codeagent`` Jupyter server extension and its configuration.

Settings live on the ``CodeAgent`` configurable so administrators write
``c.CodeAgent.model = "…"`` in ``jupyter_server_config.py`` (or
``--CodeAgent.model=…`` on the command line); the app only wires them to a
``SessionManager`` and the HTTP handlers.
"""

from __future__ import annotations

import asyncio
import functools
import os
from pathlib import Path
from typing import Any

from jupyter_server.extension.application import ExtensionApp

from ..errors import ConfigError
from ..util.hardening import make_undumpable
from .changes import routes as change_routes
from .class_egress import apply_class_egress
from .handlers import route_table
from .installs import routes as install_routes
from .manager import SessionManager
from .settings import CodeAgent, state_dir
from .uploads import routes as upload_routes

__all__ = ["CodeAgent", "CodeAgentApp", "state_dir"]


class CodeAgentApp(ExtensionApp):
    """Serves agent sessions under ``/codeagent/api`` behind the server's auth."""

    name = "codeagent"
    load_other_extensions = True
    classes = [CodeAgent]

    def initialize_settings(self) -> None:
        # The server holds the API key: same-user processes must not read its environ.
        make_undumpable()
        self.agent_settings = CodeAgent(parent=self)
        try:
            self.agent_settings.sandbox_limits()
        except ValueError as e:
            raise ConfigError(f"c.CodeAgent.limits: {e}") from e
        assert self.serverapp is not None
        root_dir = Path(os.path.expanduser(self.serverapp.root_dir)).resolve()
        hub_gateway = self._use_hub_gateway()
        self.manager = SessionManager(
            self.agent_settings,
            root_dir=root_dir,
            contents_manager=self.serverapp.contents_manager,
            log=self.log,
            state_dir=state_dir(),
            session_manager=self.serverapp.session_manager,
        )
        self.manager.models.send_session = hub_gateway
        if hub_gateway:  # the class's instructions, asked for at each session's start
            from ..hub.student import class_instructions

            self.manager.class_instructions = functools.partial(
                class_instructions, self.agent_settings.base_url, self.agent_settings.api_key
            )
        self.manager.load_saved()
        self.settings["codeagent_manager"] = self.manager
        self.mcp_hub, self.mcp_endpoint = self._mcp()
        if self.mcp_hub is not None:
            self.settings["codeagent_mcp"] = self.mcp_hub
        if self.mcp_endpoint is not None:
            self.settings["codeagent_mcp_endpoint"] = self.mcp_endpoint

    def _mcp(self) -> tuple[Any, Any]:
        """The MCP sessions (Jupyter AI's tool registry uses them beside any SDK) and the
        ``/codeagent/mcp`` endpoint over them, where an SDK that serves it is installed."""
        if not self.agent_settings.mcp:
            return None, None
        from ..mcp import registry
        from .mcp_sessions import McpHub

        hub = McpHub(self.manager)
        registry.attach(hub)  # Jupyter AI's tool registry calls into the same sandboxes
        sdk = _mcp_sdk_version()
        if sdk is None or int(sdk.split(".")[0]) < 2:  # Jupyter AI 3.2 pins the 1.x SDK
            found = f"mcp {sdk} is installed" if sdk else "mcp is not installed"
            self.log.info(f"codeagent: no MCP endpoint ({found}; it needs mcp>=2.3)")
            return hub, None
        try:
            from .mcp_endpoint import McpEndpoint

            endpoint = McpEndpoint(hub, idle_timeout=self.agent_settings.idle_timeout)
        except ImportError as e:
            self.log.warning(f"codeagent: no MCP endpoint: {e}")
            return hub, None
        return hub, endpoint

    def _use_hub_gateway(self) -> bool:
        """On JupyterHub, talk to the class gateway with the student's own hub token; whether
        it does."""
        settings = self.agent_settings
        if settings.base_url or settings.recording or "JUPYTERHUB_API_TOKEN" not in os.environ:
            return False
        from ..hub.student import find_gateway

        gateway, why = find_gateway(settings.hub_gateway)
        self.log.info("codeagent: class model gateway: %s", why)
        if gateway is not None:
            settings.base_url, settings.api_key = gateway.base_url, gateway.token
            if not (settings.model or os.environ.get("CODEAGENT_MODEL")):
                settings.model = gateway.default_model
            if gateway.egress is not None:
                self.log.info("codeagent: %s", apply_class_egress(settings, gateway.egress))
        return gateway is not None

    def initialize_handlers(self) -> None:
        self.handlers.extend(route_table() + upload_routes() + change_routes() + install_routes())
        if getattr(self, "mcp_endpoint", None) is not None:
            from .mcp_handler import routes as mcp_routes

            self.handlers.extend(mcp_routes())

    async def _start_jupyter_server_extension(self, serverapp: Any) -> None:
        # Warm the pool once the event loop runs, so the first session starts fast.
        self._pool_task = asyncio.ensure_future(self._start_services())

    async def _start_services(self) -> None:
        await self.manager.ensure_pool()
        if self.mcp_endpoint is not None:  # the SDK itself loads at its first request
            await self.mcp_endpoint.state_isolation()  # its first log line: the isolation
        elif self.mcp_hub is not None:
            await self.mcp_hub.isolation()  # the registry's sandboxes: their isolation

    async def stop_extension(self) -> None:
        if self.mcp_endpoint is not None:
            await self.mcp_endpoint.stop()
        if self.mcp_hub is not None:
            await self.mcp_hub.stop()
        await self.manager.shutdown()


def _mcp_sdk_version() -> str | None:
    """The installed ``mcp`` SDK's version, or None."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp")
    except PackageNotFoundError:
        return None
