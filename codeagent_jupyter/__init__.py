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


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext codeagent_jupyter``: registers ``%agent`` / ``%%agent``."""
    from .widget import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext codeagent_jupyter``: removes the magics."""
    from .widget import unload_ipython_extension as unload

    unload(ipython)


def panel(side: bool = False) -> Any:
    """Display an empty agent panel with a prompt box (in a notebook); ``side``: in
    JupyterLab's right sidebar, with the user's sessions listed."""
    from .widget import panel as open_panel

    return open_panel(side=side)
