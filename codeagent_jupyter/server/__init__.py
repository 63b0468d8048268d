"""The Jupyter server extension: agent sessions over REST and WebSocket under ``/codeagent/api``.

Configure it with ``c.CodeAgent.…`` (see ``CodeAgent``); the package's jupyter-config file
enables it on ``pip install``.
"""

from __future__ import annotations

from typing import Any

from .app import CodeAgent, CodeAgentApp

__all__ = ["CodeAgent", "CodeAgentApp", "_jupyter_server_extension_points"]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """How ``jupyter server`` finds the extension (re-exported by the top-level package)."""
    return [{"module": "codeagent_jupyter.server", "app": CodeAgentApp}]
