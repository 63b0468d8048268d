"""The notebook side: ``%agent`` magic and the ipywidgets panel, clients of the server API.

    %load_ext codeagent_jupyter.widget     (or %load_ext codeagent_jupyter)
    %agent plot monthly revenue from sales.csv

Nothing here runs the agent: the Jupyter server does, with the API key it holds.
"""

from __future__ import annotations

import contextlib
from typing import Any

from ..timeline.fold import SessionState, fold, reduce
from .client import AgentClient, ClientError, ServerInfo, ServerNotFound, find_server
from .panel import AgentPanel

__all__ = [
    "AgentClient",
    "AgentPanel",
    "ClientError",
    "ServerInfo",
    "ServerNotFound",
    "SessionState",
    "find_server",
    "fold",
    "load_ipython_extension",
    "panel",
    "reduce",
    "unload_ipython_extension",
]


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%agent`` / ``%%agent`` (``%load_ext``)."""
    from .magic import AgentMagics
    from .mention_completion import install

    if "AgentMagics" not in ipython.magics_manager.registry:
        ipython.register_magics(AgentMagics(ipython))
    install(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """Close this kernel's panels and remove the magics (``%unload_ext``)."""
    from .mention_completion import uninstall

    uninstall(ipython)
    magics = ipython.magics_manager.registry.pop("AgentMagics", None)
    if magics is None:
        return
    for panel in magics.panels:
        panel.close()
    for callback in (magics.watcher.post_run_cell, magics.count):
        with contextlib.suppress(ValueError):
            ipython.events.unregister("post_run_cell", callback)
    for kind in ("line", "cell"):
        ipython.magics_manager.magics[kind].pop("agent", None)


def panel(side: bool = False) -> AgentPanel | None:
    """Display an empty panel with a prompt box (None, after a one-line message, without a
    reachable server); ``side``: in JupyterLab's right sidebar with the session list (the
    labextension's "side panel and sessions" command)."""
    from .magic import new_panel

    return new_panel(side=side)
