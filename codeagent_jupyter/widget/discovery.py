"""Which Jupyter server this kernel runs under: its URL, token and root.

The kernel finds the server it was started by in the runtime files
``list_running_servers()`` reads (matched by the kernel's parent process id), or takes
``CODEAGENT_SERVER_URL`` and ``CODEAGENT_SERVER_TOKEN``. Other programs write files with
the same prefix there (Jupyter AI's MCP server: ``jpserver-mcp-<pid>.json``); only a Jupyter
server's own files count, and several candidates are probed by ``AgentClient.discover``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import CodeAgentError

NO_SERVER = (
    "codeagent: no Jupyter server with the codeagent extension found; start JupyterLab with "
    "codeagent-jupyter installed, or set CODEAGENT_SERVER_URL/CODEAGENT_SERVER_TOKEN"
)
URL_ENV, TOKEN_ENV = "CODEAGENT_SERVER_URL", "CODEAGENT_SERVER_TOKEN"


class ServerNotFound(CodeAgentError):
    """No Jupyter server with the extension can be reached from this kernel."""


class ClientError(CodeAgentError):
    """The server refused a request; ``status`` is the HTTP status (0: unreachable)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ServerInfo:
    """Where the server is: ``url`` ends with ``/`` and includes the server's base_url."""

    url: str
    token: str = ""
    root_dir: str | None = None


def find_server(
    env: Mapping[str, str] | None = None, servers: Iterable[dict[str, Any]] | None = None
) -> ServerInfo:
    """The server this kernel runs under; ``ServerNotFound`` (one line, with the fix) if none.

    Order: the environment overrides; the server whose pid launched this kernel
    (``JPY_PARENT_PID``, set by jupyter_client); the one server whose root holds the
    working directory; the only server running. ``find_servers`` lists every candidate.
    """
    return find_servers(env, servers)[0]


def find_servers(
    env: Mapping[str, str] | None = None, servers: Iterable[dict[str, Any]] | None = None
) -> list[ServerInfo]:
    """Every Jupyter server this kernel may run under, best first (see ``find_server``).

    ``list_running_servers`` reads every ``jpserver-*.json`` of the runtime directory, and
    extensions write their own files there under that prefix: jupyter_server_mcp (which
    Jupyter AI 3.2 brings) writes ``jpserver-mcp-<pid>.json`` with the pid of the very server
    it runs in and the URL of its MCP endpoint. Only files with the fields a Jupyter server
    writes (``base_url``, ``token``, ``version``) count as servers; several left for the
    kernel's parent are probed in order by ``AgentClient.discover``.
    """
    env = os.environ if env is None else env
    if env.get(URL_ENV):
        return [ServerInfo(_slash(env[URL_ENV]), env.get(TOKEN_ENV, ""))]
    if servers is None:
        from jupyter_server.serverapp import list_running_servers

        servers = list_running_servers()
    infos = [s for s in servers if _is_jupyter_server(s)]
    parent = env.get("JPY_PARENT_PID")
    chosen = [s for s in infos if parent and str(s.get("pid")) == parent]
    if not chosen:
        cwd = Path.cwd().resolve()
        holding = [s for s in infos if _contains(s.get("root_dir"), cwd)]
        if len(holding) == 1:
            chosen = holding
        elif len(infos) == 1:
            chosen = infos
    if not chosen:
        raise ServerNotFound(NO_SERVER)
    token = env.get(TOKEN_ENV)
    return [
        ServerInfo(_slash(s["url"]), token or s.get("token", ""), s.get("root_dir")) for s in chosen
    ]


SERVER_FIELDS = ("url", "base_url", "token", "version")
"""Fields of a jupyter_server runtime file (``ServerApp.server_info``) that other
``jpserver-*.json`` writers, such as jupyter_server_mcp, do not write."""


def _is_jupyter_server(info: Mapping[str, Any]) -> bool:
    return all(field in info for field in SERVER_FIELDS) and bool(info.get("url"))


def notebook_path(server: ServerInfo, env: Mapping[str, str] | None = None) -> str | None:
    """This kernel's notebook, relative to the server root (from ``JPY_SESSION_NAME``)."""
    env = os.environ if env is None else env
    name = env.get("JPY_SESSION_NAME")
    if not name:
        return None
    path = Path(name)
    if not path.is_absolute():
        return path.as_posix()
    if server.root_dir and _contains(server.root_dir, path):
        return path.relative_to(Path(server.root_dir).resolve()).as_posix()
    return None


def _contains(root: str | None, path: Path) -> bool:
    if not root:
        return False
    try:
        path.resolve().relative_to(Path(root).resolve())
    except ValueError:
        return False
    return True


def _slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"
