"""codeagent-jupyter: a Jupyter-native coding agent with a sandboxed kernel."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """How `jupyter server` finds the extension; imported lazily so kernels start fast."""
    from .server import CodeAgentApp

    return [{"module": "codeagent_jupyter.server", "app": CodeAgentApp}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where `jupyter labextension develop` finds the built frontend; pip installs use share/."""
    return [{"src": "labextension", "dest": "codeagent-jupyter"}]
